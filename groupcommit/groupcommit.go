// Package groupcommit commits each key's concurrent requests as one batch, at most once per
// interval (docs/design.md, "Group commit"): increments per counter, and collection counters'
// changes per counter.
//
// Not a supported import: see package counters.
package groupcommit

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/shardcount/counters/shared/clock"
)

// Options configure a Committer.
type Options[Req, Rep any] struct {
	Interval time.Duration
	Clock    clock.Clock
	// Commit commits batch, all of one key, and returns one Rep per request, in order.
	Commit func(ctx context.Context, batch []Req) []Rep
	// Take is how many requests at the head of queue the next batch takes: at least 1.
	Take func(queue []Req) int
	// Abandoned is the Rep of a request taken out before its batch was sent, as its ctx ended.
	Abandoned func(key string, err error) Rep
	// AfterCommit measures the interval from the end of a commit, not its start: two commits of a key
	// are then an interval apart in the database's commit times too.
	AfterCommit bool
	// Timeout bounds one Commit.
	Timeout time.Duration
}

// Committer queues requests per key and commits each key's queue, one batch per interval.
type Committer[Req, Rep any] struct {
	o Options[Req, Rep]

	mu     sync.Mutex
	groups map[string]*group[Req, Rep]
	// flushing is closed by Flush: groups commit without waiting.
	flushing  chan struct{}
	flushOnce sync.Once
}

// group is one key's queue.
type group[Req, Rep any] struct {
	queue      []*queued[Req, Rep]
	lastCommit time.Time
}

// queued is one request and where its reply goes.
type queued[Req, Rep any] struct {
	req  Req
	done chan Rep
}

// New returns a Committer as o says.
func New[Req, Rep any](o Options[Req, Rep]) *Committer[Req, Rep] {
	return &Committer[Req, Rep]{o: o, groups: make(map[string]*group[Req, Rep]), flushing: make(chan struct{})}
}

// Add queues req under key and returns its Rep; Abandoned's when ctx ends before its batch is sent.
func (c *Committer[Req, Rep]) Add(ctx context.Context, key string, req Req) Rep {
	q := &queued[Req, Rep]{req: req, done: make(chan Rep, 1)}
	c.mu.Lock()
	g, running := c.groups[key]
	if !running {
		g = &group[Req, Rep]{}
		c.groups[key] = g
	}
	g.queue = append(g.queue, q)
	c.mu.Unlock()
	if !running {
		go c.commitLoop(key, g)
	}
	select {
	case r := <-q.done:
		return r
	case <-ctx.Done():
		if c.takeOut(g, q) {
			return c.o.Abandoned(key, ctx.Err())
		}
		return <-q.done // in flight: bounded by Timeout
	}
}

// Pending is how many requests of key wait for their batch to be sent.
func (c *Committer[Req, Rep]) Pending(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.groups[key]; ok {
		return len(g.queue)
	}
	return 0
}

// Running is how many keys have a commit loop running.
func (c *Committer[Req, Rep]) Running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.groups)
}

// takeOut removes q unless its commit was sent, reporting whether it did.
func (c *Committer[Req, Rep]) takeOut(g *group[Req, Rep], q *queued[Req, Rep]) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(g.queue, q)
	if i < 0 {
		return false
	}
	g.queue = slices.Delete(g.queue, i, i+1)
	return true
}

// Flush makes every group, now and later, commit at once.
func (c *Committer[Req, Rep]) Flush() {
	c.flushOnce.Do(func() { close(c.flushing) })
}

// commitLoop commits key's queue, one batch per interval, until it is empty.
func (c *Committer[Req, Rep]) commitLoop(key string, g *group[Req, Rep]) {
	for {
		c.mu.Lock()
		wait := g.lastCommit.Add(c.o.Interval).Sub(c.o.Clock.Now())
		c.mu.Unlock()
		if wait > 0 {
			select {
			case <-c.o.Clock.After(wait):
			case <-c.flushing:
			}
		}

		c.mu.Lock()
		taken := c.take(g)
		if len(taken) == 0 {
			delete(c.groups, key)
			c.mu.Unlock()
			return
		}
		g.lastCommit = c.o.Clock.Now()
		c.mu.Unlock()

		batch := make([]Req, len(taken))
		for i, q := range taken {
			batch[i] = q.req
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
		replies := c.o.Commit(ctx, batch)
		cancel()
		if c.o.AfterCommit {
			c.mu.Lock()
			g.lastCommit = c.o.Clock.Now()
			c.mu.Unlock()
		}
		for i, q := range taken {
			q.done <- replies[i]
		}
	}
}

// take takes the next batch off g's queue, as Take says. Call with mu held.
func (c *Committer[Req, Rep]) take(g *group[Req, Rep]) []*queued[Req, Rep] {
	if len(g.queue) == 0 {
		return nil
	}
	reqs := make([]Req, len(g.queue))
	for i, q := range g.queue {
		reqs[i] = q.req
	}
	n := min(max(1, c.o.Take(reqs)), len(g.queue))
	taken := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n)
	return taken
}
