// Package version names this release; not a supported import (see package counters).
package version

// Version is the release's semantic version; its git tag is "v" + Version.
const Version = "0.11.0"
