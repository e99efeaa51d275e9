package counter

import (
	"context"
	"fmt"
)

// Close stops the Store taking increments and sees the ones it holds through: from now on increments
// fail with ErrClosed (and ErrNotApplied), every group commits what it holds at once, and Close
// returns when every increment taken has its outcome, or with ctx's error when ctx ends first.
// Reads keep working.
func (s *Store) Close(ctx context.Context) error {
	s.life.Close()
	for _, g := range []*groupCommitter{s.groups, s.changes} {
		if g != nil {
			g.flush()
		}
	}
	if err := s.life.Wait(ctx); err != nil {
		return fmt.Errorf("close counter store: increments still waiting for their writes: %w", err)
	}
	return nil
}
