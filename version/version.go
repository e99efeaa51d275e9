// Package version names this release; not a supported import (see package counters).
package version

// Version is the release's semantic version; its git tag is "v" + Version.
const Version = "0.13.0"

// Repository is where the source is published; a release's files are under blob/v<Version>/.
const Repository = "https://github.com/shardcount/counters"

// DocURL is the address of path (e.g. "docs/operations.md#monitoring") in this release's source.
func DocURL(path string) string { return Repository + "/blob/v" + Version + "/" + path }
