// Package functions holds every Cloud Functions entry point of the counters: thin HTTP and CloudEvent
// adapters that decode a request, validate it, call the counter or roll-up engine and encode the
// answer. Importing it registers them with the Functions Framework under their entry-point names.
//
// Business rules live in the counter and rollup packages, never here.
//
// Not a supported import: see package counters for what users may import.
package functions
