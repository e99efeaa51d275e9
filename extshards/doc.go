// Package extshards folds the shards that the Firebase firestore-counter extension's clients write
// (<doc>/_counter_shards_/<id>) into the counted fields of <doc>; see
// docs/migrate-from-firestore-counter.md.
//
//   - targets.go: only declared documents and fields, under extension-form shard IDs, are folded.
//   - fold.go: a fold adds to <doc> and empties the shards in one commit conditional on <doc>'s
//     read time, so retries never count twice; each <doc> is written at most once per interval;
//     shards under a missing <doc> wait.
//   - sum.go, event.go: shard sums; the shard an event names.
//
// Not a supported import: see package counters.
package extshards
