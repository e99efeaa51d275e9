// Package e2e holds end-to-end tests that drive the local stack `make test` starts: real HTTP to the
// functions served by the Functions Framework, real document events from the Firestore emulator,
// real Pub/Sub push deliveries.
package e2e
