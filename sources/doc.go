// Package sources keeps collection counters: counters whose value is the count or sum of an app's
// own documents, declared in counter-sources.json (docs/collection-counters.md says why it is
// exact and what it costs).
//
// Files and the guarantees they keep:
//
//   - declaration.go: Parse and Load refuse a declaration that cannot work, naming the entry and the
//     rule (our own collections, unknown wildcards, bad sum paths, a mirror into counted documents).
//   - pattern.go: document path patterns, counter ID templates and mirror paths.
//   - contribution.go: what one document version adds (1, its sum field, or 0 outside where).
//   - counting.go: Apply turns a document write event into changes keyed by the change itself, so a
//     redelivered, reordered or concurrent event counts once (counter/changes.go keeps the ledger);
//     the base read time starts a counter from existing documents; Verify and Repair compare with
//     count()/sum() and fix drift.
//
// Not a supported import: see package counters for what users may import.
package sources
