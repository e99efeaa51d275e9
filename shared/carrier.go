package shared

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// MaxCarry is how long one trigger event carries an instance's background work before the next
// event to arrive takes over, well within a function's timeout.
const MaxCarry = 20 * time.Second

// Carrier runs an instance's background work for trigger events and keeps one event at a time, the
// carrier, waiting until all of it has finished, so that the instance keeps its CPU (request-based
// billing) while every other event is answered at once. The zero value is ready, on the wall clock.
type Carrier struct {
	// Clock times the carriers; nil means SystemClock.
	Clock Clock

	mu sync.Mutex
	// outstanding counts the work started by Carry and not yet finished.
	outstanding int
	// generation numbers carriers; the newest one carries, since since.
	generation uint64
	carrying   bool
	since      time.Time
	// changed is closed (and replaced) when outstanding drops or a new carrier begins.
	changed chan struct{}
}

// Carry starts work in the background, with ctx's values and without its cancellation. Unless
// another caller has carried for less than MaxCarry, this caller becomes the carrier: it waits until
// no work of the Carrier is outstanding, or a newer carrier takes over, or ctx ends (err is then
// ctx's error). A caller that does not carry returns at once. carried says which it was.
func (c *Carrier) Carry(ctx context.Context, work func(context.Context)) (carried bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	c.outstanding++
	go func() {
		defer c.finished()
		work(context.WithoutCancel(ctx))
	}()
	now := c.now()
	if c.carrying && now.Sub(c.since) < MaxCarry {
		return false, nil
	}
	c.generation++
	generation := c.generation
	c.carrying, c.since = true, now
	c.signal()
	for c.outstanding > 0 && c.generation == generation {
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			err = fmt.Errorf("carry background work: %w", ctx.Err())
		}
		c.mu.Lock()
		if err != nil {
			break
		}
	}
	if c.generation == generation {
		c.carrying = false
	}
	return true, err
}

// finished records that one work has ended and wakes the carrier.
func (c *Carrier) finished() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.outstanding--
	c.signal()
}

// signal wakes the carrier. Call with c.mu held.
func (c *Carrier) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Carrier) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}
