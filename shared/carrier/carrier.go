// Package carrier keeps one event per instance in flight while the instance's background work runs
// (Cloud Run throttles CPU outside requests); docs/design.md, "The roll-up engine".
// Not a supported import: see package counters.
package carrier

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shardcount/counters/shared/clock"
)

// MaxCarry is how long one event carries an instance's background work.
const MaxCarry = 20 * time.Second

// Carrier runs background work for trigger events and keeps one event at a time, the carrier,
// waiting for all of it, so the instance keeps its CPU. The zero value is ready.
type Carrier struct {
	// Clock is nil for clock.System.
	Clock clock.Clock

	mu          sync.Mutex
	outstanding int
	generation  uint64
	carrying    bool
	since       time.Time
	changed     chan struct{}
}

// Carry starts work without ctx's cancellation. Unless another caller carried for less than
// MaxCarry, this one carries: it waits until no work is outstanding, a newer carrier takes over, or
// ctx ends (err). Otherwise it returns at once.
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

// finished ends one work.
func (c *Carrier) finished() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.outstanding--
	c.signal()
}

// signal wakes the carrier; hold c.mu.
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
