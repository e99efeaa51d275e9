package counter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardcount/counters/gate"
	"github.com/shardcount/counters/shared/wire"
)

// Request is one increment for Increment: a member, a limited increment, or deltas.
type Request struct {
	Counter string
	Delta   int64 // 0 or 1 for a member
	// Batch, with Key instead of Counter and Delta, is applied all or nothing.
	Batch []wire.Increment
	Key   *Key // at most once
	// At picks the window buckets of deltas (zero: commit time).
	At     time.Time
	Caller string
	Limit  int64 // keeps Caller's total within [0, Limit]
	Member string
}

// AppliedIncrement is one counter's share of a write.
type AppliedIncrement struct {
	Counter string
	Delta   int64 // summed; a member's: 1 when counted anywhere
	Shard   int   // -1 when nothing was written
}

// Result is what Increment did; for a duplicate, what the first application did.
type Result struct {
	Applied   []AppliedIncrement // per counter, in first-appearance order
	Counted   bool               // something was added to the value
	Duplicate bool               // the key had been applied before
	Windows   []string
	// PlannedAt is when the applying write was planned; with a key, the same for every call.
	PlannedAt time.Time
}

// Increments commits increments: deltas, keyed and batched ones deduplicated, per-caller limits,
// group commit; member increments go to Members. Close stops them all.
type Increments struct {
	*shards
	groups  *groupCommitter // nil: one commit per request
	commits committer
	life    gate.Gate // admits increments until Close
	members *Members
}

// newIncrements commits plans through plans, grouped per interval when positive, and member
// increments under fences.
func newIncrements(sh *shards, plans planStore, groupInterval time.Duration, fences *fences) *Increments {
	s := &Increments{shards: sh, commits: committer{plans: plans}}
	s.members = &Members{shards: sh, fences: fences, life: &s.life}
	if groupInterval > 0 {
		s.groups = newGroupCommitter(groupInterval, sh.clock, s.commitBatch)
	}
	return s
}

// Increment adds r, creating a missing counter unless Options.RequireExisting (ErrNotFound). Errors
// wrap ErrNotApplied, ErrOutcomeUnknown or ErrKeyReused (Result is the first application).
func (s *Increments) Increment(ctx context.Context, r Request) (Result, error) {
	limited, member := r.Limit != 0 || r.Caller != "", r.Member != ""
	switch {
	case limited && member:
		return Result{}, errors.New("increment: a request is one of a member and a limited increment")
	case (limited || member) && !r.At.IsZero():
		return Result{}, errors.New("increment: At is for deltas")
	case r.Batch != nil && (r.Key == nil || r.Counter != "" || r.Delta != 0 || limited || member):
		return Result{}, errors.New("increment: a Batch takes a Key, and no Counter, Delta or other kind")
	case member:
		return s.members.incrementDistinct(ctx, r)
	case limited:
		return s.incrementLimited(ctx, r)
	case r.Batch != nil:
		return s.incrementKeyed(ctx, *r.Key, r.At, r.Batch)
	case r.Key != nil:
		return s.incrementKeyed(ctx, *r.Key, r.At, r.increments())
	}
	rep := s.submit(ctx, batched{incs: r.increments(), at: r.At})
	if rep.err != nil {
		return Result{}, fmt.Errorf("increment counter %q: %w", r.Counter, rep.err)
	}
	rep.outcome.Counted = true
	return rep.outcome, nil
}

// increments is r's Counter and Delta.
func (r Request) increments() []wire.Increment {
	return []wire.Increment{{Counter: r.Counter, Delta: r.Delta}}
}

// incrementKeyed adds incs at most once per key; ErrDeltaOverflow when a sum overflows.
func (s *Increments) incrementKeyed(ctx context.Context, key Key, at time.Time, incs []wire.Increment) (Result, error) {
	if len(incs) == 0 || len(incs) > wire.MaxBatchIncrements {
		return Result{}, fmt.Errorf("increment key %s %q: %d increments, want 1 to %d", key.Source, key.ID, len(incs), wire.MaxBatchIncrements)
	}
	fingerprint, err := fingerprintOf(incs)
	if err != nil {
		return Result{}, err
	}
	merged, err := mergeByCounter(incs)
	if err != nil {
		return Result{}, notApplied(fmt.Errorf("increment key %s %q: %w", key.Source, key.ID, err))
	}
	r := s.submit(ctx, batched{incs: merged, key: &key, fingerprint: fingerprint, at: at})
	if r.err != nil && !errors.Is(r.err, ErrKeyReused) {
		return Result{}, fmt.Errorf("increment key %s %q: %w", key.Source, key.ID, r.err)
	}
	r.outcome.Counted = r.err == nil
	return r.outcome, r.err
}

// batched is one caller's increments, one per counter, as a group commit batches them.
type batched struct {
	incs        []wire.Increment
	key         *Key // nil: unkeyed
	fingerprint string
	at          time.Time
}

// reply is a batched request's Result or error, as Increment returns them.
type reply struct {
	outcome     Result
	fingerprint string // of the application outcome describes
	err         error
}

// submit commits req through its counter's group, or alone; ErrClosed.
func (s *Increments) submit(ctx context.Context, req batched) reply {
	if !s.life.Enter() {
		return reply{err: notApplied(ErrClosed)}
	}
	defer s.life.Leave()
	if s.groups != nil && len(req.incs) == 1 {
		return s.groups.Add(ctx, req.incs[0].Counter, req)
	}
	return s.commitBatch(ctx, []batched{req})[0]
}

// mergeByCounter sums each counter's deltas in first-appearance order; ErrDeltaOverflow.
func mergeByCounter(incs []wire.Increment) ([]wire.Increment, error) {
	index := make(map[string]int, len(incs))
	var merged []wire.Increment
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
