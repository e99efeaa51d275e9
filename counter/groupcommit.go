package counter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// maxGroupSize bounds the increments merged into one write. With deltas of at most 2^53 in
// magnitude (shared.ParseConfig's bound on MAX_DELTA), 512 of them cannot overflow an int64.
const maxGroupSize = 512

// maxShardRotation bounds the random offset of an instance in the shard rotation; any value above
// the largest shard count spreads instances evenly.
const maxShardRotation = 1 << 20

// groupCommitTimeout bounds one group write: its callers may all have given up, so no request
// context can bound it.
const groupCommitTimeout = 30 * time.Second

// groupCommitter merges the concurrent increments of each counter in this instance into one shard
// write, at most one per interval per counter. A write goes out at once when the counter's previous
// one is an interval old, so a lone increment waits for nothing; under load, the increments that
// arrive while the counter waits out its interval share the next write. Each increment is answered
// only when the write holding it has committed, and a failed write fails exactly the increments it
// held. Writes rotate over the shards by the clock, so with N shards each shard sees at most one
// write per N-1 intervals from an instance, even across idle gaps.
type groupCommitter struct {
	store    *Store
	interval time.Duration
	offset   int // this instance's place in the rotation, so instances spread over the shards

	mu     sync.Mutex
	groups map[string]*counterGroup
	closed bool           // set by close: no new increments
	flush  chan struct{}  // closed by close: write what is pending without waiting out intervals
	loops  sync.WaitGroup // running commit loops
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
	return &groupCommitter{store: store, interval: interval, offset: rand.IntN(maxShardRotation),
		groups: make(map[string]*counterGroup), flush: make(chan struct{})}
}

// add queues delta for counter id and returns when the write holding it committed or failed.
func (g *groupCommitter) add(ctx context.Context, id string, delta int64) (int, error) {
	inc := pendingIncrement{delta: delta, done: make(chan groupOutcome, 1)}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return 0, fmt.Errorf("increment counter %q: %w", id, ErrClosed)
	}
	group, running := g.groups[id]
	if !running {
		group = &counterGroup{}
		g.groups[id] = group
		g.loops.Add(1)
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
	defer g.loops.Done()
	for {
		g.mu.Lock()
		wait := time.NewTimer(time.Until(group.lastCommit.Add(g.interval)))
		g.mu.Unlock()
		select { // at once when the last write is an interval old, or when the store closes
		case <-wait.C:
		case <-g.flush:
			wait.Stop()
		}

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
		// Writes of a counter are an interval apart, so each falls in its own interval slot of the
		// clock; the slot picks the shard.
		slot := int(group.lastCommit.UnixNano()/int64(g.interval)) + g.offset
		g.mu.Unlock()

		var sum int64
		for _, inc := range batch {
			sum += inc.delta
		}
		ctx, cancel := context.WithTimeout(context.Background(), groupCommitTimeout)
		shard, err := g.store.writeIncrement(ctx, id, sum, func(numShards int) int { return slot % numShards })
		cancel()
		for _, inc := range batch {
			inc.done <- groupOutcome{shard: shard, err: err}
		}
	}
}
