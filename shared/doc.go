// Package shared holds what the functions, the roll-up engine and the counter store all agree on: the
// schema (collections, document paths, field names, topics), the increment message format, input
// validation and the classification of transient Firestore errors.
//
// It has no business rules of its own and never imports net/http or CloudEvents.
//
// Not a supported import: see package counters for what users may import.
package shared
