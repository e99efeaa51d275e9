package rollup

import (
	"context"
	"time"

	"github.com/shardcount/counters/shared/clock"

	"github.com/shardcount/counters/shared"
)

// Notify starts a refresh of counter id covering changedAt (Firestore's clock); unless the caller
// carries (carrier.Carrier), it returns at once. A refresh failing after retries calls failed.
func (e *Engine) Notify(ctx context.Context, id string, changedAt time.Time, source string, failed func(error)) (carried bool, err error) {
	return e.carry.Carry(ctx, func(ctx context.Context) {
		e.refreshInBackground(ctx, id, changedAt, source, failed)
	})
}

// refreshInBackground runs Refresh, retrying transient failures for refreshTimeout, else calls failed.
func (e *Engine) refreshInBackground(ctx context.Context, id string, changedAt time.Time, source string, failed func(error)) {
	deadline := e.clock.Now().Add(refreshTimeout)
	backoff := 250 * time.Millisecond
	var err error
	for {
		if _, err = e.Refresh(ctx, id, changedAt, source); err == nil || !shared.IsRetryable(err) || e.clock.Now().Add(backoff).After(deadline) {
			break
		}
		if clock.SleepUntil(ctx, e.clock, e.clock.Now().Add(backoff)) != nil {
			break
		}
		backoff = min(2*backoff, 8*time.Second)
	}
	if err != nil {
		failed(err)
	}
}
