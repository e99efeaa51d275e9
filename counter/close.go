package counter

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardcount/counters/shared"
)

// ErrClosed is the error of an increment refused because the Store is closing: it was not applied,
// so sending it again (to another instance) is safe.
var ErrClosed = errors.New("the counter store is closing; the increment was not applied")

// Close stops the Store taking increments, for a graceful stop: later Increment calls fail with
// ErrClosed, every increment waiting in a group commit is written now, without waiting out the
// interval, and Close returns once each of them has its outcome, or when ctx ends. Keyed increments
// (ApplyOnce) are not grouped: those under way finish on their own.
func (s *Store) Close(ctx context.Context) error {
	s.closed.Store(true)
	if s.groups == nil {
		return nil
	}
	return s.groups.close(ctx)
}

// close refuses new increments, makes the commit loops write what is pending at once, and waits for
// them to finish.
func (g *groupCommitter) close(ctx context.Context) error {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		close(g.flush)
	}
	g.mu.Unlock()
	if err := shared.Wait(ctx, &g.loops); err != nil {
		return fmt.Errorf("write pending group commits: %w", err)
	}
	return nil
}
