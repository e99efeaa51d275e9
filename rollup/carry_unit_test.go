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
	// computations counts the sums computed (totals calls), per counter.
	computations map[string]int
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
func (m *counterStores) totals(ctx context.Context, id string) (counter.Totals, error) {
	m.mu.Lock()
	m.computations[id]++
	m.mu.Unlock()
	return m.of(id).totals(ctx, id)
}
func (m *counterStores) write(ctx context.Context, id string, prev view, w rollupWrite) error {
	return m.of(id).write(ctx, id, prev, w)
}
func (m *counterStores) removeRollup(context.Context, string, view) error { return nil }
func (m *counterStores) restore(context.Context, string) error            { return nil }
func (m *counterStores) adapt(context.Context, string, int, int) error    { return nil }

// TestNotifyHoldsOneEventPerInstanceAndKeepsManyCountersFresh: four instances get the trigger events
// of 200 counters written 400 times a second in all for 20 s. An event that does not carry answers at
// once; at most one event per instance waits at a time (plus a handover); every roll-up is exact
// within two intervals of its counter's last write; each counter's roll-up is written at most about
// once an interval, and its sum computed about once an interval across the instances.
func TestNotifyHoldsOneEventPerInstanceAndKeepsManyCountersFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			interval  = time.Second
			duration  = 20 * time.Second
			rate      = 400
			counters  = 200
			instances = 4
		)
		stores := &counterStores{counters: make(map[string]*sharedStore), computations: make(map[string]int)}
		engines := make([]*Engine, instances)
		for i := range engines {
			engines[i] = newEngine(stores, skewedClock{time.Duration(i) * 300 * time.Millisecond}, interval)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		var (
			wg                 sync.WaitGroup
			mu                 sync.Mutex
			waiting            = make([]int, instances)
			mostWaiting        int
			slowNonCarriers    int
			carriers, failures int
		)
		for start := time.Now(); time.Since(start) < duration; time.Sleep(time.Second / rate) {
			id := fmt.Sprintf("c%d", rng.IntN(counters))
			i := rng.IntN(instances)
			wg.Go(func() {
				writtenAt := stores.of(id).shardWrite()
				mu.Lock()
				waiting[i]++
				mostWaiting = max(mostWaiting, waiting[i])
				mu.Unlock()
				began := time.Now()
				carried, err := engines[i].Notify(context.Background(), id, writtenAt, SourceTrigger)
				mu.Lock()
				defer mu.Unlock()
				waiting[i]--
				switch {
				case err != nil:
					failures++
				case carried:
					carriers++
				case time.Since(began) > 0:
					slowNonCarriers++
				}
			})
		}
		stopped := time.Now()
		wg.Wait()
		if failures > 0 || slowNonCarriers > 0 {
			t.Errorf("%d events failed, %d that did not carry waited; want none", failures, slowNonCarriers)
		}
		if mostWaiting > 2 {
			t.Errorf("up to %d events of one instance waited at once; want one carrier (two during a handover)", mostWaiting)
		}
		if wait := time.Since(stopped); wait > 2*interval+time.Second/8 {
			t.Errorf("the last carrier answered %v after the last write; want within two intervals", wait)
		}
		var rollupWrites, computations []int
		for id, s := range stores.counters {
			if s.rollup == nil || s.rollup.Count != int64(len(s.writes)) {
				t.Errorf("counter %s: roll-up %+v after %d writes; want it exact", id, s.rollup, len(s.writes))
			}
			rollupWrites = append(rollupWrites, len(s.rollupWrites))
			computations = append(computations, stores.computations[id])
		}
		most := int(duration/interval) + 3
		if m := slices.Max(rollupWrites); m > most {
			t.Errorf("a counter's roll-up was written %d times in %v; want at most about once an interval (%d)", m, duration, most)
		}
		if m := slices.Max(computations); m > 2*most {
			t.Errorf("a counter's sum was computed %d times in %v by %d instances; want about once an interval", m, duration, instances)
		}
		t.Logf("%d carriers of %d events; most roll-up writes per counter %d, most computations %d",
			carriers, int(duration.Seconds())*rate, slices.Max(rollupWrites), slices.Max(computations))
	})
}
