package counter

import (
	"context"
	"fmt"
	"sync"
)

// Close stops the Store taking increments and sees the ones it holds through: from now on Increment
// and ApplyOnce fail with ErrClosed (and ErrNotApplied), every group writes what it holds without
// waiting for its interval, and Close returns when every increment that was taken has its outcome,
// or with ctx's error when ctx ends first (Cloud Run allows 10 s after SIGTERM). Reads keep working.
func (s *Store) Close(ctx context.Context) error {
	s.life.close()
	if s.groups != nil {
		s.groups.flush()
	}
	select {
	case <-s.life.drained():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close counter store: increments still waiting for their writes: %w", ctx.Err())
	}
}

// lifecycle counts the writes under way and refuses new ones once closed. Its zero value is open.
type lifecycle struct {
	mu     sync.Mutex
	closed bool
	active int
	done   chan struct{} // closed when closed and no write is under way
}

// enter admits a write, unless the store is closed.
func (l *lifecycle) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.active++
	return true
}

// leave ends a write admitted by enter.
func (l *lifecycle) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active--
	l.signal()
}

// close refuses every later write.
func (l *lifecycle) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.done = make(chan struct{})
		l.signal()
	}
}

// drained is closed once the store is closed and every admitted write has ended.
func (l *lifecycle) drained() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

func (l *lifecycle) signal() {
	if l.closed && l.active == 0 {
		select {
		case <-l.done:
		default:
			close(l.done)
		}
	}
}
