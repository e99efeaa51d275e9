package counter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shardcount/counters/shared"
)

// maxGroupSize bounds the requests in one batch.
const maxGroupSize = 512

// maxKeyedPerGroup bounds the keyed requests in one batch, so its commit stays within 500 writes.
const maxKeyedPerGroup = 450

// commitFunc commits a batch of requests and returns one reply per request, in order.
type commitFunc func(ctx context.Context, batch []request) []reply

// groupCommitter merges the concurrent requests of each counter into one batch, committed at most
// once per interval per counter; a request that finds its counter idle is committed at once. Each
// request is answered only when the commit holding it has an outcome, and a failed commit fails
// exactly the requests it held.
type groupCommitter struct {
	interval time.Duration
	clock    shared.Clock
	commit   commitFunc

	mu     sync.Mutex
	groups map[string]*counterGroup
	// flushing is closed by flush: every group commits what it holds without waiting.
	flushing  chan struct{}
	flushOnce sync.Once
}

// counterGroup is one counter's queue of requests waiting for their commit.
type counterGroup struct {
	queue      []*queued
	lastCommit time.Time
}

// queued is one request in a group's queue and where its reply goes.
type queued struct {
	req  request
	done chan reply
}

func newGroupCommitter(interval time.Duration, c shared.Clock, commit commitFunc) *groupCommitter {
	return &groupCommitter{interval: interval, clock: c, commit: commit, groups: make(map[string]*counterGroup), flushing: make(chan struct{})}
}

// add queues req for counter id and returns its reply once the commit holding it has an outcome, or
// "not applied" when ctx ends before that commit was sent.
func (g *groupCommitter) add(ctx context.Context, id string, req request) reply {
	q := &queued{req: req, done: make(chan reply, 1)}
	g.mu.Lock()
	group, running := g.groups[id]
	if !running {
		group = &counterGroup{}
		g.groups[id] = group
	}
	group.queue = append(group.queue, q)
	g.mu.Unlock()
	if !running {
		go g.commitLoop(id, group)
	}
	select {
	case r := <-q.done:
		return r
	case <-ctx.Done():
		if g.takeOut(group, q) {
			return reply{err: notApplied(fmt.Errorf("gave up waiting for the group write of counter %q: %w", id, ctx.Err()))}
		}
		// The commit holding it is in flight: its outcome comes within the commit's own bounds.
		return <-q.done
	}
}

// takeOut removes q from its group if its commit has not been sent, and reports whether it did.
func (g *groupCommitter) takeOut(group *counterGroup, q *queued) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(group.queue, q)
	if i < 0 {
		return false
	}
	group.queue = slices.Delete(group.queue, i, i+1)
	return true
}

// flush makes every group commit what it holds now, and every later commit go out at once.
func (g *groupCommitter) flush() {
	g.flushOnce.Do(func() { close(g.flushing) })
}

// commitLoop commits counter id's queued requests, one batch per interval, until none are left.
func (g *groupCommitter) commitLoop(id string, group *counterGroup) {
	for {
		g.mu.Lock()
		wait := group.lastCommit.Add(g.interval).Sub(g.clock.Now())
		g.mu.Unlock()
		if wait > 0 {
			select {
			case <-g.clock.After(wait):
			case <-g.flushing:
			}
		}

		g.mu.Lock()
		taken := takeBatch(group)
		if len(taken) == 0 {
			// An interval has passed since the last commit, so a new loop may commit at once.
			delete(g.groups, id)
			g.mu.Unlock()
			return
		}
		group.lastCommit = g.clock.Now()
		g.mu.Unlock()

		batch := make([]request, len(taken))
		for i, q := range taken {
			batch[i] = q.req
		}
		// Bounds the reads before the commit; the commit and its settling have bounds of their own.
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		replies := g.commit(ctx, batch)
		cancel()
		for i, q := range taken {
			q.done <- replies[i]
		}
	}
}

// takeBatch takes the next batch off the front of group's queue: at most maxGroupSize requests, at
// most maxKeyedPerGroup keyed ones, and no more than keep their deltas' sum within int64 (a request
// of one counter merges up to shared.MaxBatchIncrements deltas, so 512 of them could overflow).
func takeBatch(group *counterGroup) []*queued {
	n, keyed := 0, 0
	var sum int64
	for n < len(group.queue) && n < maxGroupSize {
		req := group.queue[n].req
		next, ok := addDeltas(sum, req.incs[0].Delta)
		if !ok {
			break
		}
		if req.key != nil {
			if keyed == maxKeyedPerGroup {
				break
			}
			keyed++
		}
		sum = next
		n++
	}
	taken := slices.Clone(group.queue[:n])
	group.queue = slices.Delete(group.queue, 0, n)
	return taken
}
