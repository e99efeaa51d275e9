// Package counters is the deployable root (the buildpack builds only it): deploy a function with
// --source=. --entry-point=<name> (docs/operations.md). Users may import it, client/ and publisher/;
// other packages may change in any release.
package counters

import (
	// Serves the registered functions.
	_ "github.com/GoogleCloudPlatform/functions-framework-go/functions"

	_ "github.com/shardcount/counters/functions"
)
