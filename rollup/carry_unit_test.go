package rollup

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardcount/counters/counter"
)

// counterStores is many counters, each a sharedStore, as every instance sees them.
type counterStores struct {
	mu       sync.Mutex
	counters map[string]*sharedStore
	// computations counts the sums computed (sums calls) over all counters.
	computations int
}

func (m *counterStores) of(id string) *sharedStore {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.counters[id]
	if s == nil {
		s = &sharedStore{}
		m.counters[id] = s
	}
	return s
}

func (m *counterStores) read(ctx context.Context, id string) (view, error) {
	return m.of(id).read(ctx, id)
}
func (m *counterStores) sums(ctx context.Context, id string, at time.Time, windows []string) (counter.Sums, error) {
	m.mu.Lock()
	m.computations++
	m.mu.Unlock()
	return m.of(id).sums(ctx, id, at, windows)
}
func (m *counterStores) write(ctx context.Context, id string, prev view, w rollupWrite) error {
	return m.of(id).write(ctx, id, prev, w)
}
func (m *counterStores) removeRollup(context.Context, string, view) error    { return nil }
func (m *counterStores) restore(context.Context, string) error               { return nil }
func (m *counterStores) adapt(context.Context, string, int, int) error       { return nil }
func (m *counterStores) pruneHours(context.Context, string, time.Time) error { return nil }

// trigger is how an instance handles a shard write's event: Notify, or (for comparison) Refresh,
// which holds every event until a roll-up covers it.
// A refresh that fails later calls failed.
type trigger func(e *Engine, ctx context.Context, id string, changedAt time.Time, failed func(error)) (carried bool, err error)

func notify(e *Engine, ctx context.Context, id string, changedAt time.Time, failed func(error)) (bool, error) {
	return e.Notify(ctx, id, changedAt, SourceTrigger, failed)
}

func holdEach(e *Engine, ctx context.Context, id string, changedAt time.Time, _ func(error)) (bool, error) {
	_, err := e.Refresh(ctx, id, changedAt, SourceTrigger)
	return false, err
}

// load is one simulated run: shard writes at rate over counters for duration, each event handled by
// one of instances (clocks skewed up to 0.9 s), in a synctest bubble. An instance holding
// concurrency events refuses more (Cloud Run's 429), and the event is delivered again after
// redeliveryBackoff, doubling (Eventarc's retry, which starts at 10 s).
type load struct {
	counters, instances, concurrency int
	rate                             float64
	duration                         time.Duration
}

const redeliveryBackoff = 10 * time.Second

// figures are what a run measured.
type figures struct {
	events, failures int
	// slowNonCarriers counts events that did not carry and yet waited; mostHeld is the most events
	// of one instance waiting at once; refused counts deliveries refused for want of concurrency.
	slowNonCarriers, mostHeld, refused int
	// agesP99 is the p99 over counters and 100 ms samples of a roll-up's age: how long ago the oldest
	// write it does not show was made; exactAfter is when the last roll-up became exact after the
	// last write.
	ageP99, exactAfter time.Duration
	// per counter per interval, over the counters written
	computationsPerInterval, writesPerInterval float64
	inexact                                    []string
}

const simInterval = time.Second

func simulate(l load, handle trigger) figures {
	stores := &counterStores{counters: make(map[string]*sharedStore)}
	engines := make([]*Engine, l.instances)
	for i := range engines {
		engines[i] = newEngine(stores, skewedClock{time.Duration(i%4) * 300 * time.Millisecond}, simInterval)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		waiting = make([]int, l.instances)
		f       figures
		ages    []time.Duration
	)
	sampled := make(chan struct{})
	start := time.Now()
	go func() { // roll-up ages, every 100 ms
		defer close(sampled)
		for time.Since(start) < l.duration {
			time.Sleep(100 * time.Millisecond)
			now := time.Now()
			for _, s := range stores.snapshot() {
				s.mu.Lock()
				if len(s.writes) == 0 {
					s.mu.Unlock()
					continue
				}
				if s.rollup == nil || s.rollup.Count < int64(len(s.writes)) {
					shown := 0
					if s.rollup != nil {
						shown = int(s.rollup.Count)
					}
					ages = append(ages, now.Sub(s.writes[shown]))
				} else {
					ages = append(ages, 0)
				}
				s.mu.Unlock()
			}
		}
	}()
	var lastWrite time.Time
	for ; time.Since(start) < l.duration; time.Sleep(time.Duration(float64(time.Second) / l.rate)) {
		id := fmt.Sprintf("c%d", rng.IntN(l.counters))
		i := rng.IntN(l.instances)
		f.events++
		wg.Go(func() {
			writtenAt := stores.of(id).shardWrite()
			mu.Lock()
			if writtenAt.After(lastWrite) {
				lastWrite = writtenAt
			}
			for backoff := redeliveryBackoff; waiting[i] >= l.concurrency; backoff *= 2 {
				f.refused++
				mu.Unlock()
				time.Sleep(backoff)
				mu.Lock()
			}
			waiting[i]++
			f.mostHeld = max(f.mostHeld, waiting[i])
			mu.Unlock()
			began := time.Now()
			carried, err := handle(engines[i], context.Background(), id, writtenAt, func(error) {
				mu.Lock()
				defer mu.Unlock()
				f.failures++
			})
			mu.Lock()
			defer mu.Unlock()
			waiting[i]--
			switch {
			case err != nil:
				f.failures++
			case !carried && time.Since(began) > 0:
				f.slowNonCarriers++
			}
		})
	}
	wg.Wait()
	<-sampled
	f.exactAfter = time.Since(lastWrite)
	slices.Sort(ages)
	f.ageP99 = ages[len(ages)*99/100]
	writes := 0
	for id, s := range stores.counters {
		if s.rollup == nil || s.rollup.Count != int64(len(s.writes)) {
			f.inexact = append(f.inexact, id)
		}
		writes += len(s.rollupWrites)
	}
	intervals := float64(len(stores.counters)) * float64(time.Since(start)) / float64(simInterval)
	f.computationsPerInterval = float64(stores.computations) / intervals
	f.writesPerInterval = float64(writes) / intervals
	return f
}

// snapshot lists the counters written so far.
func (m *counterStores) snapshot() []*sharedStore {
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []*sharedStore
	for _, s := range m.counters {
		all = append(all, s)
	}
	return all
}

// TestNotifyKeepsManyWarmCountersFresh: 1,500 shard writes a second for 20 s over 1, 10, 100 and
// 1,000 counters, their events spread over eight instances of concurrency 80. With Notify, an event that does not
// carry answers at once, at most two events of an instance wait at a time (a carrier, and its
// successor during a handover), the roll-up age p99 stays within two intervals, every roll-up is
// exact within two intervals of the last write, and each counter's sum is computed about once an
// interval across the instances. It logs the same figures for Refresh, which holds every event.
func TestNotifyKeepsManyWarmCountersFresh(t *testing.T) {
	for _, counters := range []int{1, 10, 100, 1000} {
		t.Run(fmt.Sprint(counters), func(t *testing.T) {
			l := load{counters: counters, instances: 8, concurrency: 80, rate: 1500, duration: 20 * time.Second}
			var got, held figures
			synctest.Test(t, func(*testing.T) { got = simulate(l, notify) })
			synctest.Test(t, func(*testing.T) { held = simulate(l, holdEach) })
			for name, f := range map[string]figures{"notify": got, "hold each event": held} {
				t.Logf("%s: %d events, %d deliveries refused; most held per instance %d; roll-up age p99 %v; exact %v after the last write; "+
					"per counter and interval %.2f computations, %.2f writes",
					name, f.events, f.refused, f.mostHeld, f.ageP99, f.exactAfter, f.computationsPerInterval, f.writesPerInterval)
			}
			if got.failures > 0 || got.slowNonCarriers > 0 || len(got.inexact) > 0 {
				t.Errorf("%d events failed, %d that did not carry waited, roll-ups of %d counters inexact; want none",
					got.failures, got.slowNonCarriers, len(got.inexact))
			}
			if got.mostHeld > 2 {
				t.Errorf("up to %d events of one instance waited at once; want one carrier (two during a handover)", got.mostHeld)
			}
			if got.ageP99 > 2*simInterval || got.exactAfter > 2*simInterval+simInterval/8 {
				t.Errorf("roll-up age p99 %v, exact %v after the last write; want both within about two intervals", got.ageP99, got.exactAfter)
			}
			if got.writesPerInterval > 1.05 || got.computationsPerInterval > 1.5 {
				t.Errorf("per counter and interval %.2f roll-up writes and %.2f computations; want at most one write and about one computation",
					got.writesPerInterval, got.computationsPerInterval)
			}
		})
	}
}
