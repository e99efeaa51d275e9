package counter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shardcount/counters/shared/clock"
)

// maxGroupSize bounds the requests in one batch.
const maxGroupSize = 512

// maxKeyedPerGroup keeps a batch's commit within 500 writes.
const maxKeyedPerGroup = 450

// commitFunc commits batch and returns one reply per request, in order.
type commitFunc func(ctx context.Context, batch []batched) []reply

// groupCommitter commits each counter's concurrent requests as one batch at most once per interval.
type groupCommitter struct {
	interval time.Duration
	clock    clock.Clock
	commit   commitFunc
	// afterCommit measures the interval from the end of a commit, not its start: two commits of a
	// counter are then an interval apart in Firestore's commit times too.
	afterCommit bool

	mu     sync.Mutex
	groups map[string]*counterGroup
	// flushing is closed by flush: groups commit without waiting.
	flushing  chan struct{}
	flushOnce sync.Once
}

// counterGroup is one counter's queue.
type counterGroup struct {
	queue      []*queued
	lastCommit time.Time
}

// queued is one request and where its reply goes.
type queued struct {
	req  batched
	done chan reply
}

func newGroupCommitter(interval time.Duration, c clock.Clock, commit commitFunc) *groupCommitter {
	return &groupCommitter{interval: interval, clock: c, commit: commit, groups: make(map[string]*counterGroup), flushing: make(chan struct{})}
}

// add queues req for counter id and returns its reply; "not applied" when ctx ends before sending.
func (g *groupCommitter) add(ctx context.Context, id string, req batched) reply {
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
		return <-q.done // in flight: bounded by the commit's timeouts
	}
}

// takeOut removes q unless its commit was sent, reporting whether it did.
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

// flush makes every group, now and later, commit at once.
func (g *groupCommitter) flush() {
	g.flushOnce.Do(func() { close(g.flushing) })
}

// commitLoop commits counter id's queue, one batch per interval, until it is empty.
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
			delete(g.groups, id)
			g.mu.Unlock()
			return
		}
		group.lastCommit = g.clock.Now()
		g.mu.Unlock()

		batch := make([]batched, len(taken))
		for i, q := range taken {
			batch[i] = q.req
		}
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		replies := g.commit(ctx, batch)
		cancel()
		if g.afterCommit {
			g.mu.Lock()
			group.lastCommit = g.clock.Now()
			g.mu.Unlock()
		}
		for i, q := range taken {
			q.done <- replies[i]
		}
	}
}

// takeBatch takes the next batch off group's queue, within the bounds above and int64.
func takeBatch(group *counterGroup) []*queued {
	n, keyed := 0, 0
	var sum int64
	for n < len(group.queue) && n < maxGroupSize {
		req := group.queue[n].req
		next, ok := addDeltas(sum, req.incs[0].Delta)
		if !ok {
			break
		}
		if req.key != nil || req.change != nil { // a record each
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
