// Package gate admits work until it is closed and waits for what it admitted.
//
// Not a supported import: see package counters for what users may import.
package gate

import (
	"context"
	"sync"
)

// Gate admits work until it is closed and tells when the work it admitted has ended: what stops (a
// functions process on SIGTERM, a counter store) refuses new work and sees through what it accepted.
// Its zero value is open.
type Gate struct {
	mu     sync.Mutex
	closed bool
	active int
	done   chan struct{} // made when first needed; closed once closed and no work is under way
}

// Enter admits work, unless the gate is closed.
func (g *Gate) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.active++
	return true
}

// Leave ends work admitted by Enter.
func (g *Gate) Leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	g.signal()
}

// Close makes Enter refuse every later work.
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		g.drained()
		g.signal()
	}
}

// Wait returns nil once the gate is closed and all the work it admitted has ended, or ctx's error if
// ctx ends first (the work goes on).
func (g *Gate) Wait(ctx context.Context) error {
	g.mu.Lock()
	done := g.drained()
	g.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drained returns the channel closed once the gate is closed and idle; g.mu is held.
func (g *Gate) drained() chan struct{} {
	if g.done == nil {
		g.done = make(chan struct{})
	}
	return g.done
}

// signal closes the drained channel when the gate is closed and idle; g.mu is held.
func (g *Gate) signal() {
	if g.closed && g.active == 0 {
		select {
		case <-g.done:
		default:
			close(g.done)
		}
	}
}
