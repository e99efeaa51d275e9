package counter

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maxCommitAttempts bounds the commits of one batch.
const maxCommitAttempts = 4

// commitBatch commits batch and returns one reply per request; duplicates never fail the others.
func (s *Increments) commitBatch(ctx context.Context, batch []batched) []reply {
	replies := make([]reply, len(batch))
	leader := make([]int, len(batch))
	var live []int
	seen := make(map[string]int)
	for i, req := range batch {
		leader[i] = i
		if req.key != nil {
			id := req.key.recordID()
			if j, ok := seen[id]; ok {
				leader[i] = j
				continue
			}
			seen[id] = i
		}
		live = append(live, i)
	}
	s.commitLive(ctx, batch, live, replies)
	for i, req := range batch {
		if j := leader[i]; j != i {
			replies[i] = followerReply(req, replies[j])
		}
	}
	return replies
}

// commitLive commits batch's live requests and fills in their replies.
func (s *Increments) commitLive(ctx context.Context, batch []batched, live []int, replies []reply) {
	fail := func(err error) {
		for _, i := range live {
			replies[i] = reply{err: err}
		}
	}
	verify := false
	for attempt := 1; len(live) > 0; attempt++ {
		plan, err := s.plan(ctx, batch, live, verify)
		if err != nil {
			fail(notApplied(err))
			return
		}
		res := s.commits.send(ctx, plan)
		if res.applied {
			s.remember(plan.shards)
			for _, i := range live {
				replies[i] = reply{outcome: Result{Applied: appliedOf(plan, i, batch[i]), PlannedAt: plan.now}, fingerprint: batch[i].fingerprint}
			}
			return
		}
		if status.Code(res.err) == codes.NotFound {
			// A counter deleted under its cached count, or a shard yet to be created.
			for _, w := range plan.shards {
				s.configs.forget(w.counter)
			}
			verify = true
		}
		if attempt == maxCommitAttempts || !canRetry(res) {
			fail(res.err)
			return
		}
		live = takeOutDuplicates(batch, live, plan, res.conflicts, replies)
	}
}

// canRetry reports whether a failed commit may be sent again at once.
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

// takeOutDuplicates answers live requests with keys applied before, returning the others.
func takeOutDuplicates(batch []batched, live []int, plan *commitPlan, in inspection, replies []reply) []int {
	var rest []int
	for _, i := range live {
		d, keyed := plan.dedupeOf[i]
		rec, dup := in.duplicates[d]
		if !keyed || !dup {
			rest = append(rest, i)
			continue
		}
		out, err := duplicateOutcome(rec, *batch[i].key, batch[i].fingerprint)
		replies[i] = reply{outcome: out, fingerprint: rec.Fingerprint, err: err}
	}
	return rest
}

// appliedOf is what request i of the batch, req, got from plan.
func appliedOf(plan *commitPlan, i int, req batched) []AppliedIncrement {
	if d, ok := plan.dedupeOf[i]; ok {
		return plan.dedupes[d].applied
	}
	applied := make([]AppliedIncrement, len(req.incs))
	for n, inc := range req.incs {
		for _, w := range plan.shards {
			if w.counter == inc.Counter {
				applied[n] = AppliedIncrement{Counter: inc.Counter, Delta: inc.Delta, Shard: w.shard}
			}
		}
	}
	return applied
}

// followerReply answers req, which repeats the key of the request answered first.
func followerReply(req batched, first reply) reply {
	if first.err != nil && !errors.Is(first.err, ErrKeyReused) {
		return first
	}
	r := reply{outcome: Result{Applied: first.outcome.Applied, Duplicate: true, PlannedAt: first.outcome.PlannedAt}, fingerprint: first.fingerprint}
	if req.fingerprint != first.fingerprint {
		r.err = fmt.Errorf("increment key %s %q: %w", req.key.Source, req.key.ID, ErrKeyReused)
	}
	return r
}
