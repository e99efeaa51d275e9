// Package extshards folds the shard documents that the Firebase firestore-counter extension's clients
// write (<doc>/_counter_shards_/<id>, numeric fields incremented with set-merge, possibly nested) into
// the counted fields of <doc>, so that apps shipping those clients keep working without the
// extension. Only the documents and fields the operator declares (Targets) are folded. A fold adds what it read to <doc> and takes it out of the shards in one commit,
// conditional on <doc> being unchanged since it was read, so it is exact however often it is retried
// or resent; a Folder writes each <doc> at most once per interval.
// docs/migrate-from-firestore-counter.md says why and how to move an app.
package extshards
