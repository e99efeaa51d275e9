package counter

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// maxGroupSize bounds the increments merged into one write. With deltas of at most 2^53 in
// magnitude (shared.ParseConfig's bound on MAX_DELTA), 512 of them cannot overflow an int64.
const maxGroupSize = 512

// groupCommitTimeout bounds one group write: its callers may all have given up, so no request
// context can bound it.
const groupCommitTimeout = 30 * time.Second

// groupCommitter merges the concurrent increments of each counter in this instance into one shard
// write, at most one per interval per counter. A write goes out at once when the counter's previous
// one is an interval old, so a lone increment waits for nothing; under load, the increments that
// arrive while the counter waits out its interval share the next write. Each increment is answered
// only when the write holding it has committed, and a failed write fails exactly the increments it
// held. Each write picks its shard uniformly at random, so the writes of every instance spread evenly
// over the shards and the roll-up sizes the shard count for the total rate.
type groupCommitter struct {
	store    *Store
	interval time.Duration

	mu     sync.Mutex
	groups map[string]*counterGroup
}

// counterGroup is one counter's queue of increments waiting for their write.
type counterGroup struct {
	pending    []pendingIncrement
	lastCommit time.Time
}

// pendingIncrement is one caller's increment and where its outcome goes.
type pendingIncrement struct {
	delta int64
	done  chan groupOutcome
}

type groupOutcome struct {
	shard int
	err   error
}

func newGroupCommitter(store *Store, interval time.Duration) *groupCommitter {
	return &groupCommitter{store: store, interval: interval, groups: make(map[string]*counterGroup)}
}

// add queues delta for counter id and returns when the write holding it committed or failed.
func (g *groupCommitter) add(ctx context.Context, id string, delta int64) (int, error) {
	inc := pendingIncrement{delta: delta, done: make(chan groupOutcome, 1)}
	g.mu.Lock()
	group, running := g.groups[id]
	if !running {
		group = &counterGroup{}
		g.groups[id] = group
	}
	group.pending = append(group.pending, inc)
	g.mu.Unlock()
	if !running {
		go g.commitLoop(id, group)
	}
	select {
	case out := <-inc.done:
		return out.shard, out.err
	case <-ctx.Done():
		// The increment stays queued and may still commit: like any write whose answer was lost.
		return 0, fmt.Errorf("increment counter %q: %w", id, ctx.Err())
	}
}

// commitLoop writes counter id's queued increments, one write per interval, until none are left.
func (g *groupCommitter) commitLoop(id string, group *counterGroup) {
	for {
		g.mu.Lock()
		wait := time.Until(group.lastCommit.Add(g.interval))
		g.mu.Unlock()
		time.Sleep(wait) // no-op when the last write is an interval old

		g.mu.Lock()
		n := min(len(group.pending), maxGroupSize)
		if n == 0 {
			// An interval has passed since the last write, so a new loop may write at once.
			delete(g.groups, id)
			g.mu.Unlock()
			return
		}
		batch := group.pending[:n:n]
		group.pending = group.pending[n:]
		group.lastCommit = time.Now()
		g.mu.Unlock()

		var sum int64
		for _, inc := range batch {
			sum += inc.delta
		}
		ctx, cancel := context.WithTimeout(context.Background(), groupCommitTimeout)
		shard, err := g.store.writeIncrement(ctx, id, sum, g.store.pickShard)
		cancel()
		for _, inc := range batch {
			inc.done <- groupOutcome{shard: shard, err: err}
		}
	}
}
