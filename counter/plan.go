package counter

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"
)

// writeRecordPrefix starts every write ID, unlike any dedupe record ID.
const writeRecordPrefix = "write-"

// commitPlan is the content of one atomic commit.
type commitPlan struct {
	writeID     string    // on every document the commit creates
	writeRecord bool      // for unkeyed requests
	now         time.Time // records' created_at; buckets of requests without at
	shards      []shardWrite
	dedupes     []dedupeWrite
	dedupeOf    map[int]int // index in batch → index in dedupes
}

// shardWrite is one counter's part of a commit.
type shardWrite struct {
	counter string
	delta   int64
	shard   int
	// windows' buckets holding each part's time get that part.
	windows []string
	parts   []timedDelta
	create  bool
	// stamp sets touched_minute to minute, failing on a missing counter.
	stamp  bool
	minute int64
	// shardMustExist fails the write on a missing shard.
	shardMustExist bool
}

// dedupeWrite is one dedupe record of a commit.
type dedupeWrite struct {
	key         Key
	fingerprint string
	applied     []AppliedIncrement
	windows     []string // a member's
}

// ErrDeltaOverflow refuses, before any write, deltas that sum past int64.
var ErrDeltaOverflow = errors.New("the sum of the deltas of one write overflows int64")

// addDeltas is a+b; false on overflow.
func addDeltas(a, b int64) (int64, bool) {
	sum := a + b
	return sum, (sum > a) == (b > 0)
}

// newWriteID is a fresh random write ID.
func newWriteID() string { return writeRecordPrefix + rand.Text() }

// plan makes the commit of batch's live requests; ErrDeltaOverflow. verify: see planShard.
func (s *Increments) plan(ctx context.Context, batch []batched, live []int, verify bool) (*commitPlan, error) {
	plan := &commitPlan{writeID: newWriteID(), now: recordNow(s.clock), dedupeOf: make(map[int]int)}
	index := make(map[string]int)
	for _, i := range live {
		plan.writeRecord = plan.writeRecord || batch[i].key == nil
		for _, inc := range batch[i].incs {
			at := cmp.Or(batch[i].at, plan.now)
			if n, ok := index[inc.Counter]; ok {
				if err := plan.shards[n].add(inc.Delta, at); err != nil {
					return nil, fmt.Errorf("counter %q: %w", inc.Counter, err)
				}
				continue
			}
			w, err := s.planShard(ctx, inc.Counter, inc.Delta, at, verify, false)
			if err != nil {
				return nil, err
			}
			index[inc.Counter] = len(plan.shards)
			plan.shards = append(plan.shards, w)
		}
	}
	for _, i := range live {
		if req := batch[i]; req.key != nil {
			applied := make([]AppliedIncrement, len(req.incs))
			for n, inc := range req.incs {
				applied[n] = AppliedIncrement{Counter: inc.Counter, Delta: inc.Delta, Shard: plan.shards[index[inc.Counter]].shard}
			}
			plan.dedupeOf[i] = len(plan.dedupes)
			plan.dedupes = append(plan.dedupes, dedupeWrite{key: *req.key, fingerprint: req.fingerprint, applied: applied})
		}
	}
	return plan, nil
}

// timedDelta is a part of a shard write's delta, counting in the buckets holding at.
type timedDelta struct {
	at    time.Time
	delta int64
}

// add merges delta at time at into w; ErrDeltaOverflow.
func (w *shardWrite) add(delta int64, at time.Time) error {
	sum, ok := addDeltas(w.delta, delta)
	if !ok {
		return ErrDeltaOverflow
	}
	for i, p := range w.parts {
		if sameBuckets(w.windows, p.at, at) {
			if w.parts[i].delta, ok = addDeltas(p.delta, delta); !ok {
				return ErrDeltaOverflow
			}
			w.delta = sum
			return nil
		}
	}
	w.parts = append(w.parts, timedDelta{at: at, delta: delta})
	w.delta = sum
	return nil
}
