package shared

import (
	"context"
	"time"
)

// Clock is the time source of the counter and rollup packages; tests inject a fake one.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// SleepUntil waits on c until t, or until ctx ends and returns its error.
func SleepUntil(ctx context.Context, c Clock, t time.Time) error {
	select {
	case <-c.After(t.Sub(c.Now())):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
