// Package gate admits work until closed.
//
// Not a supported import: see package counters.
package gate

import (
	"context"
	"sync"
)

// Gate admits work until closed; its zero value is open.
type Gate struct {
	mu     sync.Mutex
	closed bool
	active int
	done   chan struct{}
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

// Close makes Enter refuse later work.
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		g.drained()
		g.signal()
	}
}

// Wait returns nil once the gate is closed and idle, or ctx's error.
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

// drained returns the channel closed when closed and idle; hold g.mu.
func (g *Gate) drained() chan struct{} {
	if g.done == nil {
		g.done = make(chan struct{})
	}
	return g.done
}

// signal closes it if due; hold g.mu.
func (g *Gate) signal() {
	if g.closed && g.active == 0 {
		select {
		case <-g.done:
		default:
			close(g.done)
		}
	}
}
