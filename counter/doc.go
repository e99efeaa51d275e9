// Package counter implements distributed counters on Firestore: an increment is a server-side
// increment of one shard, and the exact value is one aggregation query. Errors say whether an
// increment certainly was not applied (ErrNotApplied) or nobody can tell (ErrOutcomeUnknown).
//
// # Types and their guarantees
//
// NewStore returns a Store: the parts below, sharing one cache of counters' configuration (shards).
//
//   - Increments: an increment applies once per key, is settled as applied or not (ErrNotApplied,
//     ErrOutcomeUnknown), keeps a caller within its limit, and is seen through by Close.
//   - Members: a member counts once per member epoch, guarded by its epoch's fences (fences).
//   - Lifecycle: Configure never changes a value; Reset and Delete are ordered against increments.
//   - Collections: a collection counter changes in its sources' transactions only.
//   - Reader: a value is one aggregation over the shards, exact when read.
//   - Pruner: hour buckets older than Options.HourBucketsKept go.
//
// # The path of an increment
//
// Each file calls only files below it:
//
//  1. increment.go: Increments.Increment, the one entry, submits a request.
//  2. groupcommit.go: a counter's concurrent requests share one batch per interval.
//  3. batch.go: a batch commits; repeated keys are answered as duplicates.
//  4. plan.go: a commit's plan: shard writes and dedupe records.
//  5. commit.go: the plan commits; an ambiguous failure is settled.
//  6. firestore.go: commit, read-back and fence in Firestore.
//  7. documents.go: plans as Firestore operations.
//
// Side paths: callerlimit.go (steps 4 and 7 in one transaction), distinct.go (one batch guarded by
// memberfence.go), collection.go (step 4's shard writes for package sources' transactions);
// windows.go buckets. Below: shards.go, key.go, outcome.go, configcache.go, shardpick.go, touch.go,
// shape.go.
//
// Names: inc is a counter and delta, req a caller's increments, w a shard write, dw a dedupe write.
// Not a supported import: see package counters.
package counter
