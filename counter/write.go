package counter

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Every shard write (a group of increments, a guide-mode increment, a keyed HTTP increment, a Pub/Sub
// message) is one atomic commit with a fresh random write ID that makes it safe to send again. The
// client library re-sends a commit whose answer it lost (apiv1 retries Commit on Unavailable), and a
// shard increment is not idempotent; a commit that creates a document named or marked by its write ID
// is: if it had already applied, the second attempt fails with AlreadyExists, and reading the document
// says "applied".
//
// A commit holding an unkeyed increment creates a write record named by the write ID. An ambiguous
// failure is never answered "not applied" on a guess: it is settled by a fence, a lone Create of the
// same write record, after which the original commit can never apply.
//
// A commit of keyed increments only needs no write record: each dedupe record it creates carries the
// write ID, and every attempt, and every later delivery of the same keys, creates the same dedupe
// records, so at most one of them ever applies. An ambiguous failure is settled by sending the same
// commit once more: applied, or AlreadyExists on records carrying our write ID (applied), or a
// duplicate found, or, failing that, unknown (the keys make any later retry safe).

// Bounds of one write. They hold whatever the caller's context says: a write in flight is seen
// through, so that its callers learn its outcome.
const (
	// commitTimeout bounds one commit, the client library's own retries of it included.
	commitTimeout = 10 * time.Second
	// resolveTimeout bounds what settles a failed commit: reading what it would have created, fencing.
	resolveTimeout = 5 * time.Second
	// maxWriteAttempts bounds the commits of one batch. Each new attempt follows a certain "not
	// applied": contention (Aborted), a duplicate key taken out, a counter created meanwhile.
	maxWriteAttempts = 4
	// writeRecordTTL is how long a write record lives: only retries of its commit read it, and they
	// end within seconds.
	writeRecordTTL = time.Hour
	// writeRecordPrefix starts every write record's document ID, so it never equals a dedupe record's
	// (a hex hash).
	writeRecordPrefix = "write-"
)

// entry is one caller's increments waiting for a write: one increment per counter (summed), and the
// key that makes them apply once, if any.
type entry struct {
	incs []shared.Increment
	// key is nil for an unkeyed increment; a keyed entry writes a dedupe record in the same commit.
	key         *Key
	fingerprint string
}

// entryResult is what became of an entry: its Outcome, or an error wrapping ErrNotApplied or
// ErrOutcomeUnknown (or ErrKeyReused, with the first application as Outcome).
type entryResult struct {
	outcome Outcome
	// fingerprint is the fingerprint of the application the outcome describes (the first one, for a
	// duplicate), so entries with the same key in one batch can tell a retry from a reused key.
	fingerprint string
	err         error
}

// shardWrite is one counter's part of a commit.
type shardWrite struct {
	counter string
	delta   int64
	shard   int
	// create makes the counter (absent when planned) with the default shard count in the same commit.
	create bool
	// stamp sets the counter's touched_minute to minute in the same commit (at most once a minute per
	// instance).
	stamp  bool
	minute int64
}

// keyedWrite is one dedupe record of a commit.
type keyedWrite struct {
	key         Key
	fingerprint string
	applied     []AppliedIncrement
}

// commitPlan is the content of one atomic commit.
type commitPlan struct {
	writeID string
	// writeRecord: the commit creates the write record writeID, because it holds an unkeyed increment.
	writeRecord bool
	now         time.Time
	shards      []shardWrite
	keyed       []keyedWrite
	// keyedOf maps a keyed entry's index in its batch to its dedupe record's index in keyed.
	keyedOf map[int]int
}

// writeState is what a write record says about the commit that would have created it.
type writeState int

const (
	writeAbsent  writeState = iota // no record: the commit has not applied
	writeApplied                   // the commit applied
	writeFenced                    // a fence holds the ID: the commit never will apply
)

// inspection is what a failed commit finds in the database.
type inspection struct {
	write writeState
	// duplicates are the dedupe records of the plan's keys that exist, by index in plan.keyed.
	duplicates map[int]dedupeRecordData
	// existing lists the counters the plan meant to create that exist.
	existing []string
}

// planStore does the database work of a write: the real one is Firestore (firestorePlans); tests
// inject failures.
type planStore interface {
	// commit applies the plan atomically.
	commit(ctx context.Context, plan *commitPlan) error
	// inspect reads the documents the plan creates: its write record (or, without one, the write ID
	// on its dedupe records) tells whether it applied.
	inspect(ctx context.Context, plan *commitPlan) (inspection, error)
	// fence creates the plan's write record alone, marked as a fence.
	fence(ctx context.Context, plan *commitPlan) error
}

// commitResult is what became of one commit.
type commitResult struct {
	applied bool
	// inspection, after an AlreadyExists that was not ours: the documents in the way.
	conflicts inspection
	// err, when not applied: wraps ErrNotApplied or ErrOutcomeUnknown.
	err error
}

// newWriteID is a fresh write record ID: 128 random bits.
func newWriteID() string { return writeRecordPrefix + rand.Text() }

// apply commits plan and settles its outcome; it never answers "not applied" unless the commit
// certainly did not and never will apply.
func (s *Store) apply(ctx context.Context, plan *commitPlan) commitResult {
	err := s.plans.commit(ctx, plan)
	if err == nil {
		return commitResult{applied: true}
	}
	if r, ok := s.readBack(ctx, plan, err); ok {
		return r
	}
	return s.settle(ctx, plan, err)
}

// readBack decides a commit that failed with AlreadyExists from the documents it creates: applied
// (an earlier attempt of it did), or not applied because documents created by others are in its
// way. ok is false when it cannot tell (another error, or nothing in the way after all).
func (s *Store) readBack(ctx context.Context, plan *commitPlan, err error) (_ commitResult, ok bool) {
	if status.Code(err) != codes.AlreadyExists {
		return commitResult{}, false
	}
	in, ierr := s.plans.inspect(ctx, plan)
	switch {
	case ierr != nil:
		return commitResult{}, false
	case in.write == writeApplied:
		return commitResult{applied: true}, true
	case len(in.duplicates) > 0 || len(in.existing) > 0:
		// Every attempt of this commit creates these documents, which exist without our write ID:
		// none applied, and none ever can.
		return commitResult{conflicts: in, err: notApplied(err)}, true
	}
	return commitResult{}, false
}

// settle finds out whether a commit that failed with cause applied: by fencing its write record, or,
// for a commit of keyed increments only, by sending it once more.
func (s *Store) settle(ctx context.Context, plan *commitPlan, cause error) commitResult {
	if !plan.writeRecord {
		return s.resend(ctx, plan, cause)
	}
	ferr := s.plans.fence(ctx, plan)
	if ferr == nil {
		return commitResult{err: notApplied(cause)} // the commit can never apply now
	}
	if status.Code(ferr) == codes.AlreadyExists {
		in, ierr := s.plans.inspect(ctx, plan)
		switch {
		case ierr != nil:
			ferr = ierr
		case in.write == writeApplied:
			return commitResult{applied: true}
		case in.write == writeFenced:
			// Our fence applied on an earlier attempt the client library re-sent.
			return commitResult{err: notApplied(cause)}
		}
	}
	return commitResult{err: outcomeUnknown(fmt.Errorf("%w; settling it failed: %w", cause, ferr))}
}

// resend sends a commit of keyed increments only once more after it failed with cause: every attempt
// creates the same dedupe records, so at most one applies.
func (s *Store) resend(ctx context.Context, plan *commitPlan, cause error) commitResult {
	err := s.plans.commit(ctx, plan)
	if err == nil {
		return commitResult{applied: true}
	}
	if r, ok := s.readBack(ctx, plan, err); ok {
		return r
	}
	return commitResult{err: outcomeUnknown(fmt.Errorf("%w; sending it again failed: %w", cause, err))}
}

// writeEntries writes a batch of entries in one commit, or in a few when some must be taken out
// (a key already applied, entries repeating a key), and returns each entry's result. A duplicate
// never fails the others: it is answered with the first application and the rest are committed.
func (s *Store) writeEntries(ctx context.Context, batch []entry) []entryResult {
	results := make([]entryResult, len(batch))
	// Entries repeating a key already in the batch wait for the first one and answer as its
	// duplicates: one commit cannot create a dedupe record twice.
	leader := make([]int, len(batch))
	var live []int
	seen := make(map[string]int)
	for i, e := range batch {
		leader[i] = i
		if e.key != nil {
			id := e.key.recordID()
			if j, ok := seen[id]; ok {
				leader[i] = j
				continue
			}
			seen[id] = i
		}
		live = append(live, i)
	}
	s.writeLive(ctx, batch, live, results)
	for i, e := range batch {
		if j := leader[i]; j != i {
			results[i] = followerResult(e, results[j])
		}
	}
	return results
}

// writeLive commits the live entries of batch, taking out duplicates, until they are written or fail.
func (s *Store) writeLive(ctx context.Context, batch []entry, live []int, results []entryResult) {
	fail := func(err error) {
		for _, i := range live {
			results[i] = entryResult{err: err}
		}
	}
	for attempt := 1; len(live) > 0; attempt++ {
		plan, err := s.plan(ctx, batch, live)
		if err != nil {
			fail(notApplied(err))
			return
		}
		res := s.apply(ctx, plan)
		if res.applied {
			s.applied(plan)
			for _, i := range live {
				results[i] = entryResult{outcome: Outcome{Applied: plan.appliedOf(i, batch[i])}, fingerprint: batch[i].fingerprint}
			}
			return
		}
		if status.Code(res.err) == codes.NotFound {
			// A counter was deleted under its cached shard count: the next plan creates it again.
			for _, w := range plan.shards {
				s.shardCounts.forget(w.counter)
			}
		}
		if attempt == maxWriteAttempts || !canRetry(res) {
			fail(res.err)
			return
		}
		live = takeOutDuplicates(batch, live, plan, res.conflicts, results)
	}
}

// canRetry reports whether a batch that was certainly not applied may be committed again at once:
// contention, documents in the way (taken out or learnt), or a counter deleted under a cached count.
func canRetry(res commitResult) bool {
	if !errors.Is(res.err, ErrNotApplied) {
		return false
	}
	switch status.Code(res.err) {
	case codes.Aborted, codes.AlreadyExists, codes.NotFound:
		return true
	}
	return false
}

// takeOutDuplicates answers the live entries whose keys were applied before with the first
// application, and returns the others.
func takeOutDuplicates(batch []entry, live []int, plan *commitPlan, in inspection, results []entryResult) []int {
	var rest []int
	for _, i := range live {
		k, keyed := plan.keyedOf[i]
		rec, dup := in.duplicates[k]
		if !keyed || !dup {
			rest = append(rest, i)
			continue
		}
		out, err := duplicateOutcome(rec, *batch[i].key, batch[i].fingerprint)
		results[i] = entryResult{outcome: out, fingerprint: rec.Fingerprint, err: err}
	}
	return rest
}

// followerResult answers an entry that repeats the key of an earlier entry of its batch.
func followerResult(e entry, first entryResult) entryResult {
	if first.err != nil && !errors.Is(first.err, ErrKeyReused) {
		return first // not applied, or unknown: the same holds for the repeat
	}
	r := entryResult{outcome: Outcome{Applied: first.outcome.Applied, Duplicate: true}, fingerprint: first.fingerprint}
	if e.fingerprint != first.fingerprint {
		r.err = fmt.Errorf("apply key %s %q: %w", e.key.Source, e.key.ID, ErrKeyReused)
	}
	return r
}

// plan makes the commit of the live entries: a random shard of each counter, the sum of its deltas,
// the counter's creation when it is absent, the touched_minute stamp when it is due.
func (s *Store) plan(ctx context.Context, batch []entry, live []int) (*commitPlan, error) {
	p := &commitPlan{writeID: newWriteID(), now: s.clock.Now(), keyedOf: make(map[int]int)}
	index := make(map[string]int)
	for _, i := range live {
		p.writeRecord = p.writeRecord || batch[i].key == nil
		for _, inc := range batch[i].incs {
			if n, ok := index[inc.Counter]; ok {
				p.shards[n].delta += inc.Delta
				continue
			}
			w, err := s.planShard(ctx, inc.Counter, inc.Delta)
			if err != nil {
				return nil, err
			}
			index[inc.Counter] = len(p.shards)
			p.shards = append(p.shards, w)
		}
	}
	for _, i := range live {
		if e := batch[i]; e.key != nil {
			applied := make([]AppliedIncrement, len(e.incs))
			for n, inc := range e.incs {
				applied[n] = AppliedIncrement{Counter: inc.Counter, Delta: inc.Delta, Shard: p.shards[index[inc.Counter]].shard}
			}
			p.keyedOf[i] = len(p.keyed)
			p.keyed = append(p.keyed, keyedWrite{key: *e.key, fingerprint: e.fingerprint, applied: applied})
		}
	}
	return p, nil
}

// planShard plans a write of delta to counter: a shard picked among its cached (or read) count, the
// counter's creation when it does not exist, and its touched stamp when one is due.
func (s *Store) planShard(ctx context.Context, counter string, delta int64) (shardWrite, error) {
	numShards, err := s.numShards(ctx, counter)
	create := errors.Is(err, ErrNotFound)
	if create {
		numShards = s.defaultNumShards
	} else if err != nil {
		return shardWrite{}, err
	}
	minute, due := s.touches.due(counter)
	return shardWrite{counter: counter, delta: delta, shard: s.pickShard(counter, numShards), create: create, stamp: !create && due, minute: minute}, nil
}

// appliedOf is what entry i of the batch got from the plan: its increments on the shards chosen.
func (p *commitPlan) appliedOf(i int, e entry) []AppliedIncrement {
	if k, ok := p.keyedOf[i]; ok {
		return p.keyed[k].applied
	}
	applied := make([]AppliedIncrement, len(e.incs))
	for n, inc := range e.incs {
		for _, w := range p.shards {
			if w.counter == inc.Counter {
				applied[n] = AppliedIncrement{Counter: inc.Counter, Delta: inc.Delta, Shard: w.shard}
			}
		}
	}
	return applied
}

// applied updates what this instance knows after plan committed: counters it created exist, and
// stamped counters need no stamp for a minute.
func (s *Store) applied(plan *commitPlan) {
	for _, w := range plan.shards {
		if w.create {
			s.shardCounts.put(w.counter, s.defaultNumShards)
		}
		if w.create || w.stamp {
			s.touches.record(w.counter, w.minute)
		}
	}
}
