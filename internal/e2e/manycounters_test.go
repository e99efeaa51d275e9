package e2e_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/rollup"
)

// TestRollupsOfManyWarmCounters spreads increments over 100 counters through the stack's Increment
// while the Firestore emulator's events reach RollupOnShardWrite. During the load every roll-up is
// at most about two intervals behind its acknowledged increments, after it every roll-up is exact
// within about two intervals, and the trigger answers its events at once instead of holding them:
// only the one event per instance that carries the roll-ups waits. The emulator's own delay in
// delivering events (measured by the event bridge) is added to both bounds: it is not the roll-up's.
func TestRollupsOfManyWarmCounters(t *testing.T) {
	stack := newStack(t)
	const (
		counters = 100
		clients  = 16
		rate     = 150 // increments per second, over all counters
		duration = 8 * time.Second
	)
	ids := make([]string, counters)
	refs := make([]*firestore.DocumentRef, counters)
	for i := range ids {
		ids[i] = testenv.UniqueID("warm")
		refs[i] = schema.RollupRef(stack.Client, ids[i])
	}
	before := eventStats(t, stack)

	var mu sync.Mutex
	acked := make([][]time.Time, counters) // per counter, when each increment was acknowledged
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(duration)
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for n := 0; ; n++ {
				next := start.Add(time.Duration(n*clients+c) * time.Second / rate)
				if next.After(stop) {
					return
				}
				time.Sleep(time.Until(next))
				k := rng.IntN(counters)
				if err := increment(stack, ids[k], 1); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[k] = append(acked[k], time.Now())
				mu.Unlock()
			}
		})
	}
	// Roll-up age: how long ago the oldest acknowledged increment a roll-up does not show was acknowledged.
	var ages []time.Duration
	for time.Now().Before(stop) {
		time.Sleep(250 * time.Millisecond)
		counts := rollupCounts(t, stack, refs)
		now := time.Now()
		mu.Lock()
		for k := range ids {
			if shown := counts[k]; shown < int64(len(acked[k])) {
				ages = append(ages, now.Sub(acked[k][shown]))
			} else {
				ages = append(ages, 0)
			}
		}
		mu.Unlock()
	}
	wg.Wait()
	loadEnd := time.Now()
	exactAfter := waitFor(t, time.Minute, "every roll-up exact", func() bool {
		counts := rollupCounts(t, stack, refs)
		for k := range ids {
			if counts[k] != int64(len(acked[k])) {
				return false
			}
		}
		return true
	})
	waitFor(t, time.Minute, "all Firestore events delivered", func() bool { return eventsIdle(t, stack) })
	after := eventStats(t, stack)

	slices.Sort(ages)
	ageP99 := ages[len(ages)*99/100]
	delay := after.Lateness.P99 // of every event the stack delivered so far
	deliveries := after.Invocations - before.Invocations
	slow := after.SlowAnswers - before.SlowAnswers
	t.Logf("%d counters, %d increments in %v; roll-up age p50 %v p99 %v max %v; exact %v after the load; "+
		"%d deliveries, %d answered after more than %v; the emulator's event delay p99 %v",
		counters, total(acked), loadEnd.Sub(start).Round(time.Millisecond), ages[len(ages)/2].Round(time.Millisecond),
		ageP99.Round(time.Millisecond), ages[len(ages)-1].Round(time.Millisecond), exactAfter.Round(time.Millisecond),
		deliveries, slow, localstack.SlowAnswer, delay.Round(time.Millisecond))
	if bound := 2*interval + delay; ageP99 > bound {
		t.Errorf("roll-up age p99 %v during the load, beyond two intervals plus the emulator's event delay (%v)", ageP99, bound)
	}
	if bound := 2*interval + delay + time.Second/2; exactAfter > bound {
		t.Errorf("every roll-up exact only %v after the load, beyond two intervals plus the emulator's event delay (%v)", exactAfter, bound)
	}
	// One carrier per instance per 20 s, and a little slack for a loaded machine.
	if most := deliveries / 20; slow > most {
		t.Errorf("%d of %d events answered after more than %v; want only the carriers (at most %d): an event that carries no roll-up is answered at once",
			slow, deliveries, localstack.SlowAnswer, most)
	}
}

// rollupCounts reads the roll-ups refs in one batch; a missing one counts 0.
func rollupCounts(t testing.TB, stack *stack, refs []*firestore.DocumentRef) []int64 {
	t.Helper()
	snaps, err := stack.Client.GetAll(context.Background(), refs)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int64, len(snaps))
	for i, snap := range snaps {
		if !snap.Exists() {
			continue
		}
		var d rollup.Document
		if err := snap.DataTo(&d); err != nil {
			t.Fatal(err)
		}
		counts[i] = d.Count
	}
	return counts
}

func total(acked [][]time.Time) int {
	n := 0
	for _, a := range acked {
		n += len(a)
	}
	return n
}
