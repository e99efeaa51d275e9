// Package shared holds what every function and engine of the counters agrees on: the counter schema
// (collections, document paths, field names), input validation, configuration read from the
// environment, the Firestore client, error classification and structured logging.
//
// It has no business rules of its own and never imports net/http or CloudEvents.
package shared
