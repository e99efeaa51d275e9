package shared

import (
	"context"
	"sync"
)

// Wait returns nil once wg's count is zero, or ctx's error if ctx ends first (wg's goroutines go on).
func Wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
