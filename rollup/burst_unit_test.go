package rollup

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// bursts is a simulated run of one counter: bursts of writes spaced gap apart, each event delivered
// eventDelay after its write to one of the instances in turn (clocks skewed up to 0.9 s) and handled
// by Notify, with quiet time between the bursts, in a synctest bubble.
type bursts struct {
	instances, bursts, writes int
	gap, quiet                time.Duration
}

const eventDelay = 20 * time.Millisecond

// burstFigures are what a run of bursts measured: per burst, how long after its last write the
// roll-up was exact, and the intervals it kept the counter busy, counted whole; and in all, the sums
// computed and the roll-ups written.
type burstFigures struct {
	exactAfter           []time.Duration
	intervals            int
	computations, writes int
}

func (b bursts) run() burstFigures {
	stores := &counterStores{counters: make(map[string]*sharedStore)}
	engines := make([]*Engine, b.instances)
	for i := range engines {
		engines[i] = newEngine(stores, skewedClock{time.Duration(i%4) * 300 * time.Millisecond}, simInterval)
	}
	s := stores.of("c")
	exact := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.rollup != nil && s.rollup.Count == int64(len(s.writes))
	}
	var (
		f  burstFigures
		wg sync.WaitGroup
		n  int
	)
	for range b.bursts {
		var first, last time.Time
		for w := range b.writes {
			if w > 0 {
				time.Sleep(b.gap)
			}
			last = s.shardWrite()
			if w == 0 {
				first = last
			}
			e, changedAt := engines[n%b.instances], last
			n++
			wg.Go(func() {
				time.Sleep(eventDelay)
				_, _ = e.Notify(context.Background(), "c", changedAt, SourceTrigger, func(error) {})
			})
		}
		for !exact() {
			time.Sleep(time.Millisecond)
		}
		exactAt := time.Now()
		f.exactAfter = append(f.exactAfter, exactAt.Sub(last))
		time.Sleep(b.quiet)
		// The burst kept the counter busy until its roll-up was exact, or until its last roll-up
		// was computed if that was later (the same count, by an instance that had not seen it).
		busy := exactAt.Sub(first)
		s.mu.Lock()
		busy = max(busy, s.rollup.UpdatedAt.Sub(first))
		s.mu.Unlock()
		f.intervals += int((busy + simInterval - 1) / simInterval)
	}
	wg.Wait()
	f.computations, f.writes = stores.computations, len(s.rollupWrites)
	return f
}

// TestBurstIsExactSoonAfterItsLastWrite: after a burst on one counter shorter than an interval (20
// writes in 0.34 s, 40 in 0.68 s), its roll-up is exact within half an interval of the last write,
// on one instance and on eight; when the instance that wrote the last roll-up has none of the burst's
// events (5 writes over 8 instances), within 3/4 of an interval. Meanwhile the counter's sum is
// computed about once per interval it is busy, and written at most once. Bursts of 2.7 s are exact
// within two intervals of their last write, at the same cost.
func TestBurstIsExactSoonAfterItsLastWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		b      bursts
		within time.Duration
	}{
		{"short bursts, one instance", bursts{instances: 1, bursts: 20, writes: 20, gap: 10 * time.Millisecond, quiet: 3 * time.Second}, simInterval / 2},
		{"short bursts, eight instances", bursts{instances: 8, bursts: 20, writes: 20, gap: 10 * time.Millisecond, quiet: 3 * time.Second}, simInterval / 2},
		{"sparse short bursts, eight instances", bursts{instances: 8, bursts: 20, writes: 5, gap: 40 * time.Millisecond, quiet: 3 * time.Second}, simInterval * 3 / 4},
		{"bursts of 0.7 s, one instance", bursts{instances: 1, bursts: 20, writes: 40, gap: 10 * time.Millisecond, quiet: 3 * time.Second}, simInterval / 2},
		{"bursts of 0.7 s, eight instances", bursts{instances: 8, bursts: 20, writes: 40, gap: 10 * time.Millisecond, quiet: 3 * time.Second}, simInterval / 2},
		{"bursts of 2.7 s, eight instances", bursts{instances: 8, bursts: 10, writes: 100, gap: 20 * time.Millisecond, quiet: 3 * time.Second}, 2 * simInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f burstFigures
			synctest.Test(t, func(*testing.T) { f = tc.b.run() })
			slices.Sort(f.exactAfter)
			perInterval := float64(f.computations) / float64(f.intervals)
			t.Logf("last write -> exact roll-up: min %v, p50 %v, max %v; %d computations and %d writes over %d busy intervals (%.2f computations per interval)",
				f.exactAfter[0], f.exactAfter[len(f.exactAfter)/2], f.exactAfter[len(f.exactAfter)-1], f.computations, f.writes, f.intervals, perInterval)
			if worst := f.exactAfter[len(f.exactAfter)-1]; worst > tc.within {
				t.Errorf("roll-up exact up to %v after a burst's last write; want within %v", worst, tc.within)
			}
			if f.writes > f.intervals || perInterval > 1.5 {
				t.Errorf("%d roll-up writes and %s computations over %d busy intervals; want at most one write and about one computation per interval",
					f.writes, fmt.Sprint(f.computations), f.intervals)
			}
		})
	}
}
