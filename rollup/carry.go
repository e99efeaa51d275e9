package rollup

import (
	"context"
	"fmt"
	"time"

	"github.com/shardcount/counters/shared"
)

// maxCarry is how long one trigger event carries an instance's roll-ups before the next event to
// arrive takes over, well within the function's timeout.
const maxCarry = 20 * time.Second

// carrier is an Engine's record of the refreshes Notify started and of the trigger event that waits
// for them (the carrier), guarded by Engine.mu.
type carrier struct {
	// outstanding counts the refreshes started by Notify and not yet finished.
	outstanding int
	// generation numbers carriers; the newest one carries, since since.
	generation uint64
	carrying   bool
	since      time.Time
	// changed is closed (and replaced) when outstanding drops or a new carrier begins.
	changed chan struct{}
}

// Notify makes sure a roll-up of counter id covering a change at changedAt (on Firestore's clock)
// follows, without making the caller wait for it: the refresh runs in this Engine, and only one
// caller at a time, the carrier, waits for every refresh of the Engine to finish (and for
// maxCarry at most, after which the next caller takes over). carried says whether this call was the
// carrier; err is only its context's end. A caller that does not carry returns at once.
//
// A refresh that still fails after retrying transient failures for refreshTimeout calls failed with
// its error (which names the counter), possibly after Notify returned; the scheduled sweep rolls the
// counter up later. The refreshes live as long as the process: when it dies, the carrier's event is
// redelivered, and the sweep rolls up the counters of the others.
func (e *Engine) Notify(ctx context.Context, id string, changedAt time.Time, source string, failed func(error)) (carried bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := &e.carry
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	c.outstanding++
	go e.refreshInBackground(context.WithoutCancel(ctx), id, changedAt, source, failed)
	now := e.clock.Now()
	if c.carrying && now.Sub(c.since) < maxCarry {
		return false, nil
	}
	c.generation++
	generation := c.generation
	c.carrying, c.since = true, now
	e.signalCarrier()
	for c.outstanding > 0 && c.generation == generation {
		changed := c.changed
		e.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			err = fmt.Errorf("carry roll-ups: %w", ctx.Err())
		}
		e.mu.Lock()
		if err != nil {
			break
		}
	}
	if c.generation == generation {
		c.carrying = false
	}
	return true, err
}

// refreshInBackground runs Refresh for Notify, retrying transient failures for up to
// refreshTimeout, and reports a lasting failure to failed.
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
		failed(err) // before the carrier may return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.carry.outstanding--
	e.signalCarrier()
}

// signalCarrier wakes the carrier. Call with e.mu held.
func (e *Engine) signalCarrier() {
	close(e.carry.changed)
	e.carry.changed = make(chan struct{})
}
