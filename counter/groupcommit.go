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

// maxKeyedPerGroup keeps a batch's commit within 500 writes.
const maxKeyedPerGroup = 450

// commitFunc commits a batch of requests and returns one reply per request, in order.
type commitFunc func(ctx context.Context, batch []request) []reply

// groupCommitter commits each counter's concurrent requests as one batch at most once per interval
// (at once when idle); each request is answered with its commit's outcome.
type groupCommitter struct {
	interval time.Duration
	clock    shared.Clock
	commit   commitFunc

	mu     sync.Mutex
	groups map[string]*counterGroup
	// flushing is closed by flush: groups commit without waiting.
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

// add queues req for counter id and returns its commit's reply, or "not applied" when ctx ends
// before the commit was sent.
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
		return <-q.done // in flight: the outcome comes within the commit's bounds
	}
}

// takeOut removes q from its group unless its commit was sent, reporting whether it did.
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
			delete(g.groups, id) // an interval has passed: a new loop may commit at once
			g.mu.Unlock()
			return
		}
		group.lastCommit = g.clock.Now()
		g.mu.Unlock()

		batch := make([]request, len(taken))
		for i, q := range taken {
			batch[i] = q.req
		}
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout) // the reads before it
		replies := g.commit(ctx, batch)
		cancel()
		for i, q := range taken {
			q.done <- replies[i]
		}
	}
}

// takeBatch takes the next batch off group's queue: at most maxGroupSize requests, maxKeyedPerGroup
// keyed ones, and a delta sum within int64.
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
