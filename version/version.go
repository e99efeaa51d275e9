// Package version names the release this source is: a semantic version, the same in the functions'
// start-up log, `scripts/deploy.sh --version`, the deployed functions' label and CHANGELOG.md's top
// release (a test holds them together). The release's git tag is "v" + Version.
package version

// Version is this release's semantic version (without the "v" of its tag).
const Version = "0.11.0"

// Repository is where the source is published; a release's files are under blob/v<Version>/.
const Repository = "https://github.com/shardcount/counters"

// DocURL is the address of path (e.g. "docs/operations.md#monitoring") in this release's source.
func DocURL(path string) string { return Repository + "/blob/v" + Version + "/" + path }
