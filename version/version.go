// Package version names the release this source is: a semantic version, the same in the functions'
// start-up log, `scripts/deploy.sh --version`, the deployed functions' label and CHANGELOG.md's top
// release (a test holds them together). The release's git tag is "v" + Version.
//
// Not a supported import: see package counters for what users may import.
package version

// Version is this release's semantic version (without the "v" of its tag).
const Version = "0.11.0"
