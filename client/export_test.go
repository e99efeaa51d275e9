package client

import (
	"context"
	"time"
)

// RecordWaits makes the client's waits between attempts return at once, recording each in *waits,
// until the returned function restores them.
func RecordWaits(waits *[]time.Duration) (restore func()) {
	saved := sleep
	sleep = func(ctx context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return ctx.Err()
	}
	return func() { sleep = saved }
}

// Backoff is backoff, for tests.
var Backoff = backoff
