package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/internal/loadreport"
	"github.com/shardcount/counters/publisher"
	"github.com/shardcount/counters/shared"
)

// publishLoad publishes o.messages increments (delta 1, spread round robin over the counters) to the
// local stack's increments topic with o.clients concurrent publishers, each message with an
// idempotency key; a failed publish is retried with the same key, and o.republishFraction of the
// messages are published twice, as a publisher whose acknowledgement was lost does. It then waits
// until the exact count has taken in every published message: Drain is the time from the first
// publish until then.
func publishLoad(ctx context.Context, o options, s *stack, ids []string, w *watcher) (*observed, error) {
	pub, err := publisher.New(ctx, s.project, shared.TopicIncrements, publisher.EmulatorOptions(s.pubsub)...)
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	obs := &observed{outcomes: make([]loadreport.Outcomes, len(ids)), answers: map[string]int64{}, start: time.Now()}
	t := newRecorder(obs, w)
	w.start(obs.start, t)
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range o.messages {
			next <- i
		}
	}()
	var wg sync.WaitGroup
	for range o.clients {
		wg.Go(func() {
			pace := newPacer(o)
			for i := range next {
				pace.wait()
				k := i % len(ids)
				t.offer()
				began := time.Now()
				out, retries := publishOnce(ctx, pub, publisher.NewKey(), ids[k], o.republishFraction, t.answer)
				t.done(k, out, retries, time.Since(began))
			}
		})
	}
	wg.Wait()
	published := time.Now()
	var want int64
	for _, oc := range obs.outcomes {
		want += oc.Acknowledged
	}
	for deadline := published.Add(o.drainTimeout); ; time.Sleep(100 * time.Millisecond) {
		if got := w.exactTotal(ctx); got >= want {
			obs.drain = time.Since(obs.start)
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "  Pub/Sub increments not all counted %s after the last publish\n", o.drainTimeout)
			break
		}
	}
	obs.end = time.Now()
	w.loadEnded()
	return obs, nil
}

// publishOnce publishes one increment of counter with key, retrying failures with the same key; with
// probability republish it publishes the message once more after success. The outcome is applied
// when Pub/Sub took the message, unknown when every attempt failed (one may have reached the topic).
func publishOnce(ctx context.Context, pub *publisher.Publisher, key, counter string, republish float64, answer func(string)) (outcome, int) {
	inc := wire.Increment{Counter: counter, Delta: 1}
	backoff := firstBackoff
	for n := 1; ; n++ {
		_, err := pub.Publish(ctx, key, inc)
		if err == nil {
			answer("published")
			if rand.Float64() >= republish {
				return applied, n - 1
			}
			if _, err := pub.Publish(ctx, key, inc); err != nil {
				answer("republish failed")
			} else {
				answer("republished (same key)")
			}
			return applied, n
		}
		answer("publish failed")
		if n == maxAttempts {
			return unknown, n - 1
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, maxBackoff)
	}
}
