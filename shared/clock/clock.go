// Package clock is the time source of the engines: the system clock in production, a fake in tests.
// Not a supported import: see package counters.
package clock

import (
	"context"
	"time"
)

// Clock is a time source; tests inject a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// System is the wall clock.
type System struct{}

// Now is time.Now.
func (System) Now() time.Time { return time.Now() }

// After is time.After.
func (System) After(d time.Duration) <-chan time.Time { return time.After(d) }

// SleepUntil waits on c until t, or returns ctx's error.
func SleepUntil(ctx context.Context, c Clock, t time.Time) error {
	select {
	case <-c.After(t.Sub(c.Now())):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
