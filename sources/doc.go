// Package sources keeps collection counters: the count or sum of an app's documents, declared in
// counter-sources.json (docs/collection-counters.md).
//
// Files and the guarantees they keep:
//
//   - declaration.go: Parse and Load refuse a declaration that cannot work, naming the entry and rule.
//   - pattern.go: document path patterns, counter ID templates and mirror paths.
//   - counterid.go: counter IDs from a document's path and counter fields ({field:PATH}); two
//     documents of different values never build one ID, and no two declarations can.
//   - where.go: filters match what Firestore's query with them matches.
//   - read.go: the counter IDs a "read": "none" declaration closes to clients.
//   - contribution.go: what one document version adds.
//   - counting.go: Count counts each document change once, however delivered, on counters its
//     declaration made only; a counter starts from the existing documents; Verify and Repair
//     compare with count()/sum() and fix drift; a counter based under a changed declaration is
//     rebased; CheckQuiet checks every quiet counter in turn and repairs it and its mirror.
//   - ledger.go: each change counts once: a record created in the transaction adding its delta,
//     one transaction per counter and CHANGE_COMMIT_INTERVAL (package groupcommit).
//   - base.go: a counter's base, one read time's exact value, stamped once across instances.
//   - backfill.go: Backfill bases the counters of documents older than their declaration.
//   - canary.go: a declaration with "canary": true has a probe document, which counts nowhere;
//     ProbeTriggers reads stale unless the trigger (SeeProbe) recorded the nonce last sent.
//
// Not a supported import: see package counters.
package sources
