package counter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardcount/counters/shared"
)

// Request is one increment for Apply. Its kind follows from the fields set: Change makes it a
// change of a collection counter, Member a distinct member, Limit (with Caller) a per-caller
// limited increment; else it adds deltas.
type Request struct {
	// Counter is the counter ID and Delta what to add (a member counts 1: Delta is 0 or 1).
	Counter string
	Delta   int64
	// Batch, with Key and instead of Counter and Delta, holds 1 to shared.MaxBatchIncrements deltas
	// applied all or nothing.
	Batch []shared.Increment
	// Key, when set, applies the request at most once (not with Change, which has its own key).
	Key *Key
	// At is when deltas or a change were made: they count in the window buckets holding At (zero:
	// the commit's time). A Pub/Sub message passes its publish time.
	At time.Time
	// Caller and Limit keep Caller's total on the counter within [0, Limit] (Limit at least 1).
	Caller string
	Limit  int64
	// Member is counted once in a counter configured distinct.
	Member string
	// Change is a change of a collection counter's documents: Delta is its effect (not 0), At its
	// commit time.
	Change *Change
}

// AppliedIncrement is one counter's share of a write: the delta it got and the shard.
type AppliedIncrement struct {
	// Counter is the counter ID.
	Counter string
	// Delta is the sum of the counter's deltas in the write (a member: 1 when it counted all time or
	// in a window bucket; 0 when nothing was written).
	Delta int64
	// Shard is the shard that received Delta, -1 when nothing was written.
	Shard int
}

// Result is what Apply did. For a duplicate it is what the first application did.
type Result struct {
	// Applied lists each distinct counter of the request with its delta and shard, in the order the
	// counters first appear (none for a change not counted now).
	Applied []AppliedIncrement
	// Counted is false when a limit refused the increment, a member was not new all time, or a
	// change was a duplicate or in its counter's base: nothing was added to the value.
	Counted bool
	// Duplicate is true when the key (or the change's key) had been applied before, by an earlier or
	// a concurrent call: nothing was written this time.
	Duplicate bool
	// InBase is true when the counter's base already held the change.
	InBase bool
	// Windows lists the windows in whose current bucket a member was new and counted.
	Windows []string
	// PlannedAt is when the write that applied the request was planned, before it committed. With a
	// key it is the key's dedupe record's created_at (UTC, whole microseconds), the same for every
	// call with the key. Zero for a change.
	PlannedAt time.Time
}

// Apply applies r once it has committed. A counter that does not exist is created with the default
// shard count in the same write (Options.RequireExisting: ErrNotFound; a distinct counter is
// configured first). With Options.GroupCommitInterval set, concurrent deltas of one counter in this
// Store share one shard write per interval, and so do changes.
//
// An error wraps ErrNotApplied when r certainly was not applied, ErrOutcomeUnknown when nobody can
// tell (a keyed request is always safe to send again), ErrKeyReused (with the first application as
// Result) when the key was applied to another request; a change's error means it may not be
// counted yet: send it again.
func (s *Store) Apply(ctx context.Context, r Request) (Result, error) {
	limited, member := r.Limit != 0 || r.Caller != "", r.Member != ""
	switch {
	case r.Change != nil && (limited || member), limited && member:
		return Result{}, errors.New("apply: a request is one of a change, a member and a limited increment")
	case (limited || member) && !r.At.IsZero():
		return Result{}, errors.New("apply: At is for deltas and changes")
	case r.Batch != nil && (r.Key == nil || r.Counter != "" || r.Delta != 0 || limited || member || r.Change != nil):
		return Result{}, errors.New("apply: a Batch takes a Key, and no Counter, Delta or other kind")
	case r.Change != nil:
		return s.applyChange(ctx, r)
	case member:
		return s.incrementDistinct(ctx, r)
	case limited:
		return s.incrementLimited(ctx, r)
	case r.Batch != nil:
		return s.applyOnce(ctx, *r.Key, r.At, r.Batch)
	case r.Key != nil:
		return s.applyOnce(ctx, *r.Key, r.At, r.increments())
	}
	rep := s.submit(ctx, request{incs: r.increments(), at: r.At})
	if rep.err != nil {
		return Result{}, fmt.Errorf("increment counter %q: %w", r.Counter, rep.err)
	}
	rep.outcome.Counted = true
	return rep.outcome, nil
}

// increments is r's Counter and Delta as increments.
func (r Request) increments() []shared.Increment {
	return []shared.Increment{{Counter: r.Counter, Delta: r.Delta}}
}

// applyOnce applies incs at most once per key, in one atomic commit that also creates the key's
// dedupe record (deleted by Firestore's TTL policy after Options.DedupeTTL): one shard of each
// distinct counter gets the sum of its deltas (ErrNotApplied and ErrDeltaOverflow past int64). With
// group commit on, a key over a single counter shares its counter's group write.
func (s *Store) applyOnce(ctx context.Context, key Key, at time.Time, incs []shared.Increment) (Result, error) {
	if len(incs) == 0 || len(incs) > shared.MaxBatchIncrements {
		return Result{}, fmt.Errorf("apply key %s %q: %d increments, want 1 to %d", key.Source, key.ID, len(incs), shared.MaxBatchIncrements)
	}
	fingerprint, err := fingerprintOf(incs)
	if err != nil {
		return Result{}, err
	}
	merged, err := mergeByCounter(incs)
	if err != nil {
		return Result{}, notApplied(fmt.Errorf("apply key %s %q: %w", key.Source, key.ID, err))
	}
	r := s.submit(ctx, request{incs: merged, key: &key, fingerprint: fingerprint, at: at})
	if r.err != nil && !errors.Is(r.err, ErrKeyReused) {
		return Result{}, fmt.Errorf("apply key %s %q: %w", key.Source, key.ID, r.err)
	}
	r.outcome.Counted = r.err == nil
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
	// change, when not nil, makes the request a change of a collection counter.
	change *Change
}

// reply is what became of a request: its Result, or an error wrapping ErrNotApplied or
// ErrOutcomeUnknown (or ErrKeyReused, with the first application as Result).
type reply struct {
	outcome Result
	// fingerprint is that of the application the outcome describes (the first one, for a duplicate),
	// so requests repeating a key in one batch can tell a retry from a reused key.
	fingerprint string
	err         error
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
