// Package counter implements distributed counters on Firestore, as in the Firebase "Distributed
// counters" guide: an increment lands on one shard with a server-side increment (no read-modify-write),
// the shard count can change at any time without changing the value, and the exact value is one
// aggregation query over every shard document. Every increment is retry-safe: an error says whether
// it certainly was not applied (ErrNotApplied) or nobody can tell (ErrOutcomeUnknown).
//
// It never imports net/http or CloudEvents: the functions package adapts it to triggers.
//
// # The path of an increment
//
// Each file calls only files below it in this list:
//
//  1. increment.go: Apply, the one entry of every increment, makes a request of deltas and submits it.
//  2. groupcommit.go: a counter's concurrent requests wait for one batch per interval.
//  3. batch.go: a batch is committed, repeated keys answered as duplicates, one reply per request.
//  4. plan.go: a plan of the commit: a shard write per counter (shard, creation, touched stamp),
//     a dedupe record per keyed request; remember records what a committed plan created.
//  5. commit.go: the plan is committed and an ambiguous failure settled (read back, fence, resend).
//  6. firestore.go: the commit, read-back and fence in Firestore.
//  7. documents.go: the one mapping from a shard write (and dedupe and write records) to Firestore
//     operations, for a WriteBatch or a Transaction.
//
// A limited increment (callerlimit.go) takes steps 4 and 7 in one transaction; a member
// (distinct.go) in one write batch whose preconditions are the member's documents and its shard's
// member fence (memberfence.go); a collection counter's changes (changes.go) take step 2, then one
// transaction per batch. A shard write also counts in its counter's window buckets (windows.go).
// Below the path: key.go, outcome.go, and what a Store remembers per counter (shardcache.go,
// shardpick.go, touch.go, shape.go).
//
// Names: an increment (inc) is a counter and a delta; a request (req) is one caller's increments and
// key; a batch is the requests committed together; a reply answers a request; a plan is one commit's
// content, made of shard writes (w) and dedupe writes (dw).
//
// Not a supported import: see package counters for what users may import.
package counter
