// Package sources keeps collection counters: the count or sum of an app's documents, declared in
// counter-sources.json (docs/collection-counters.md).
//
// Files and the guarantees they keep:
//
//   - declaration.go: Parse and Load refuse a declaration that cannot work, naming the entry and rule.
//   - pattern.go: document path patterns, counter ID templates and mirror paths.
//   - contribution.go: what one document version adds.
//   - counting.go: Apply counts each document change once, however delivered; a counter starts from
//     the existing documents; Verify and Repair compare with count()/sum() and fix drift.
//
// Not a supported import: see package counters.
package sources
