package rollup

import (
	"context"
	"time"

	"github.com/shardcount/counters/shared"
)

// Notify makes sure a roll-up of counter id covering a change at changedAt (on Firestore's clock)
// follows, without making the caller wait for it: the refresh runs in this Engine, and only one
// caller at a time, the carrier, waits for every refresh of the Engine to finish (and for
// shared.MaxCarry at most, after which the next caller takes over; see shared.Carrier). carried says
// whether this call was the carrier; err is only its context's end. A caller that does not carry
// returns at once.
//
// A refresh that still fails after retrying transient failures for refreshTimeout calls failed with
// its error (which names the counter), possibly after Notify returned; the scheduled sweep rolls the
// counter up later. The refreshes live as long as the process: when it dies, the carrier's event is
// redelivered, and the sweep rolls up the counters of the others.
func (e *Engine) Notify(ctx context.Context, id string, changedAt time.Time, source string, failed func(error)) (carried bool, err error) {
	return e.carry.Carry(ctx, func(ctx context.Context) {
		e.refreshInBackground(ctx, id, changedAt, source, failed)
	})
}

// refreshInBackground runs Refresh for Notify, retrying transient failures for up to
// refreshTimeout, and reports a lasting failure to failed (before the carrier may return).
func (e *Engine) refreshInBackground(ctx context.Context, id string, changedAt time.Time, source string, failed func(error)) {
	deadline := e.clock.Now().Add(refreshTimeout)
	backoff := 250 * time.Millisecond
	var err error
	for {
		if _, err = e.Refresh(ctx, id, changedAt, source); err == nil || !shared.IsRetryable(err) || e.clock.Now().Add(backoff).After(deadline) {
			break
		}
		if shared.SleepUntil(ctx, e.clock, e.clock.Now().Add(backoff)) != nil {
			break
		}
		backoff = min(2*backoff, 8*time.Second)
	}
	if err != nil {
		failed(err)
	}
}
