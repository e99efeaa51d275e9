package counter

import (
	"context"
	"fmt"
)

// Close refuses new increments (ErrClosed), commits held ones at once, and returns when every taken
// increment has its outcome, or with ctx's error. Reads keep working.
func (s *Increments) Close(ctx context.Context) error {
	s.life.Close()
	if s.groups != nil {
		s.groups.Flush()
	}
	if err := s.life.Wait(ctx); err != nil {
		return fmt.Errorf("close counter store: increments still waiting for their writes: %w", err)
	}
	return nil
}
