package counter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardcount/counters/shared"
)

// AppliedIncrement is one counter's share of a write: the counter's deltas, summed, and the shard
// they landed on.
type AppliedIncrement struct {
	// Counter is the counter ID.
	Counter string
	// Delta is the sum of the counter's deltas in the write.
	Delta int64
	// Shard is the shard that received Delta.
	Shard int
}

// Outcome is what ApplyOnce did.
type Outcome struct {
	// Applied lists each distinct counter with its summed delta and shard, in the order the counters
	// first appear in the increments. For a duplicate it is what the first application did.
	Applied []AppliedIncrement
	// Duplicate is true when the key had been applied before (by an earlier or a concurrent call), so
	// nothing was written this time.
	Duplicate bool
	// PlannedAt is when the write that applied the increments was planned: after the first call with
	// the key began, before that write committed. It is the key's dedupe record's created_at (UTC, in
	// whole microseconds), so every call with the key gets the same.
	PlannedAt time.Time
}

// Increment adds delta to one shard of counter id and returns that shard, once the write holding it
// has committed. A counter that does not exist is created with the default shard count in the same
// write (with Options.RequireExisting: refused with ErrNotFound). With Options.GroupCommitInterval set, concurrent increments of id in this Store share one
// shard write per interval.
//
// An error wraps ErrNotApplied when the increment certainly was not applied, ErrOutcomeUnknown when
// nobody can tell.
func (s *Store) Increment(ctx context.Context, id string, delta int64) (shard int, err error) {
	r := s.submit(ctx, request{incs: []shared.Increment{{Counter: id, Delta: delta}}})
	if r.err != nil {
		return 0, fmt.Errorf("increment counter %q: %w", id, r.err)
	}
	return r.outcome.Applied[0].Shard, nil
}

// ApplyOnce applies incs at most once per key, in one atomic commit that also creates the key's
// dedupe record (deleted by Firestore's TTL policy after Options.DedupeTTL): one shard of each
// distinct counter gets the sum of its deltas, and missing counters are created (with
// Options.RequireExisting: the whole call fails with ErrNotFound). With group commit on,
// a key over a single counter shares its counter's group write.
//
// When the key was applied before, nothing is written and the Outcome is the first application's,
// with Duplicate set; the error wraps ErrKeyReused if incs differ from it. Any other error wraps
// ErrNotApplied or ErrOutcomeUnknown (ErrNotApplied and ErrDeltaOverflow when one counter's deltas
// sum past int64); a keyed increment is always safe to send again.
func (s *Store) ApplyOnce(ctx context.Context, key Key, incs []shared.Increment) (Outcome, error) {
	return s.ApplyOnceAt(ctx, key, time.Time{}, incs)
}

// ApplyOnceAt is ApplyOnce for increments made at time at, which counts them in the window buckets
// holding at instead of those holding the time of the commit (zero at: the commit's). A Pub/Sub
// message passes its publish time, so a backlog or a replay counts it in the bucket it was sent in.
func (s *Store) ApplyOnceAt(ctx context.Context, key Key, at time.Time, incs []shared.Increment) (Outcome, error) {
	if len(incs) == 0 || len(incs) > shared.MaxBatchIncrements {
		return Outcome{}, fmt.Errorf("apply key %s %q: %d increments, want 1 to %d", key.Source, key.ID, len(incs), shared.MaxBatchIncrements)
	}
	fingerprint, err := fingerprintOf(incs)
	if err != nil {
		return Outcome{}, err
	}
	merged, err := mergeByCounter(incs)
	if err != nil {
		return Outcome{}, notApplied(fmt.Errorf("apply key %s %q: %w", key.Source, key.ID, err))
	}
	r := s.submit(ctx, request{incs: merged, key: &key, fingerprint: fingerprint, at: at})
	if r.err != nil && !errors.Is(r.err, ErrKeyReused) {
		return Outcome{}, fmt.Errorf("apply key %s %q: %w", key.Source, key.ID, r.err)
	}
	return r.outcome, r.err
}

// request is one caller's increments on their way to a commit: one per counter (summed), and the key
// that makes them apply once, if any.
type request struct {
	incs []shared.Increment
	// key is nil for an unkeyed request; a keyed request writes a dedupe record in the same commit.
	key         *Key
	fingerprint string
	// at is when the increments were made: they count in the window buckets holding it (zero: the
	// commit's time).
	at time.Time
	// change, when not nil, makes the request a change of a collection counter (ApplyChange).
	change *changeRequest
}

// reply is what became of a request: its Outcome, or an error wrapping ErrNotApplied or
// ErrOutcomeUnknown (or ErrKeyReused, with the first application as Outcome).
type reply struct {
	outcome Outcome
	// fingerprint is that of the application the outcome describes (the first one, for a duplicate),
	// so requests repeating a key in one batch can tell a retry from a reused key.
	fingerprint   string
	changeOutcome ChangeOutcome
	err           error
}

// submit commits req through its counter's group when group commit is on and req touches one
// counter, else in a batch of its own; it refuses req once Close has begun.
func (s *Store) submit(ctx context.Context, req request) reply {
	if !s.life.Enter() {
		return reply{err: notApplied(ErrClosed)}
	}
	defer s.life.Leave()
	if s.changes != nil && req.change != nil {
		return s.changes.add(ctx, req.incs[0].Counter, req)
	}
	if s.groups != nil && len(req.incs) == 1 {
		return s.groups.add(ctx, req.incs[0].Counter, req)
	}
	return s.commitBatch(ctx, []request{req})[0]
}

// mergeByCounter sums the deltas of each counter, in the order counters first appear;
// ErrDeltaOverflow when a sum overflows int64.
func mergeByCounter(incs []shared.Increment) ([]shared.Increment, error) {
	index := make(map[string]int, len(incs))
	var merged []shared.Increment
	for _, inc := range incs {
		if i, ok := index[inc.Counter]; ok {
			sum, ok := addDeltas(merged[i].Delta, inc.Delta)
			if !ok {
				return nil, fmt.Errorf("counter %q: %w", inc.Counter, ErrDeltaOverflow)
			}
			merged[i].Delta = sum
			continue
		}
		index[inc.Counter] = len(merged)
		merged = append(merged, inc)
	}
	return merged, nil
}
