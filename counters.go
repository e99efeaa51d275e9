// Package counters is the deployable root of the distributed counters: gcloud's Go buildpack builds
// only this package, so it imports the Functions Framework and the package whose init registers every
// entry point. Deploy any of them with --source=. --entry-point=<name> (see docs/operations.md).
//
// What users may import: this package (to deploy), client/ (call the functions from Go) and
// publisher/ (publish increments to the topic). Every other package serves the deployment or its
// tools and may change in any release; those that need no deploying live under internal/.
package counters

import (
	// The Functions Framework serves what the functions package registers.
	_ "github.com/GoogleCloudPlatform/functions-framework-go/functions"

	_ "github.com/shardcount/counters/functions"
)
