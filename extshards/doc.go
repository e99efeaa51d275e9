// Package extshards folds the shard documents that the Firebase firestore-counter extension's clients
// write (<doc>/_counter_shards_/<id>, numeric fields incremented with set-merge) into the counted
// fields of <doc>, so that apps shipping those clients keep working without the extension.
// docs/migrate-from-firestore-counter.md says why and how to move an app.
//
// Files and the guarantees they keep:
//
//   - targets.go: only the documents and fields the operator declares, under shard IDs of the
//     extension's form, are folded.
//   - fold.go: a fold adds what it read to <doc> and takes it out of the shards in one commit, on
//     condition that <doc> is unchanged since its read time (exact however often it is retried); a
//     Folder writes each <doc> at most once per interval; shards under a missing <doc> wait.
//   - sum.go: the numeric fields of a shard, summed.
//   - event.go: the shard named by a document event.
//
// Not a supported import: see package counters for what users may import.
package extshards
