package rollup

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardcount/counters/counter"
)

// sharedStore is one counter's shards and roll-up as every instance sees them, on "Firestore's clock"
// (time.Now inside a synctest bubble: fake time, advanced only when every goroutine waits). Every
// call takes a little time, so instances interleave as they would on a network.
type sharedStore struct {
	mu      sync.Mutex
	writes  []time.Time // update times of the shard writes, one increment each
	rollup  *Document
	version time.Time
	// rollupWrites are the roll-up documents written, in order.
	rollupWrites []Document
}

const storeLatency = 7 * time.Millisecond

func (s *sharedStore) shardWrite() time.Time {
	time.Sleep(storeLatency)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.writes = append(s.writes, now)
	return now
}

func (s *sharedStore) read(context.Context, string) (view, error) {
	time.Sleep(storeLatency)
	s.mu.Lock()
	defer s.mu.Unlock()
	v := view{version: s.version, counterExists: true, shape: counter.Shape{NumShards: 10, MinShards: 10, MaxShards: 10}, readAt: time.Now()}
	if s.rollup != nil {
		d := *s.rollup
		v.rollup = &d
	}
	return v, nil
}

// sums counts the shard writes made at or before at, as Firestore's read at a read time does.
func (s *sharedStore) sums(_ context.Context, _ string, at time.Time, _ []string) (counter.Sums, error) {
	time.Sleep(storeLatency)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int64(0)
	for _, w := range s.writes {
		if !w.After(at) {
			n++
		}
	}
	return counter.Sums{Totals: counter.Totals{Count: n, Writes: n, Shards: 10}}, nil
}

func (s *sharedStore) write(_ context.Context, _ string, prev view, w rollupWrite) error {
	time.Sleep(storeLatency)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !prev.version.Equal(s.version) || (prev.rollup == nil) != (s.rollup == nil) {
		return errConflict
	}
	s.rollup = &Document{Count: w.count, UpdatedAt: w.computedAt, ShardWrites: w.shardWrites, Writer: w.writer}
	s.version = time.Now()
	s.rollupWrites = append(s.rollupWrites, *s.rollup)
	return nil
}

func (s *sharedStore) removeRollup(context.Context, string, view) error    { return nil }
func (s *sharedStore) restore(context.Context, string) error               { return nil }
func (s *sharedStore) adapt(context.Context, string, int, int) error       { return nil }
func (s *sharedStore) pruneHours(context.Context, string, time.Time) error { return nil }

// skewedClock is an instance's clock, off by skew from Firestore's.
type skewedClock struct{ skew time.Duration }

func (c skewedClock) Now() time.Time                         { return time.Now().Add(c.skew) }
func (c skewedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// TestContendingInstancesWithSkewedClocksRollUpEveryWrite: eight instances, their clocks up to 2 s
// off Firestore's, share a counter written 50 times a second for 20 s; each shard write's event goes
// to one of them. Every event is answered without error (a refresh is bounded by time, and waiting
// for the next interval is no failed attempt), and when it is answered the roll-up covers its write:
// coverage is decided on Firestore's clock, never the instance's. The roll-up is written about once
// an interval.
func TestContendingInstancesWithSkewedClocksRollUpEveryWrite(t *testing.T) {
	for _, skews := range [][]time.Duration{
		{0, 0, 0, 0, 0, 0, 0, 0},
		{2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, -2 * time.Second, -2 * time.Second, -2 * time.Second, -2 * time.Second},
		{-2 * time.Second, 0, 2 * time.Second, -time.Second, time.Second, -1500 * time.Millisecond, 1500 * time.Millisecond, 0},
	} {
		t.Run(fmt.Sprint(skews), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { contend(t, skews) })
		})
	}
}

func contend(t *testing.T, skews []time.Duration) {
	const (
		interval = time.Second
		duration = 20 * time.Second
		rate     = 50 // shard writes per second
	)
	store := &sharedStore{}
	engines := make([]*Engine, len(skews))
	for i, skew := range skews {
		engines[i] = newEngine(store, skewedClock{skew}, interval)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var (
		wg       sync.WaitGroup
		failures []string
	)
	for start := time.Now(); time.Since(start) < duration; time.Sleep(time.Second / rate) {
		e := engines[rng.IntN(len(engines))]
		wg.Go(func() {
			writtenAt := store.shardWrite()
			store.mu.Lock()
			written := int64(len(store.writes))
			store.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := e.Refresh(ctx, "c", writtenAt, SourceTrigger)
			store.mu.Lock()
			defer store.mu.Unlock()
			switch {
			case err != nil:
				failures = append(failures, err.Error())
			case store.rollup == nil || store.rollup.Count < written:
				failures = append(failures, fmt.Sprintf("write %d answered with the roll-up at %+v", written, store.rollup))
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d events failed, e.g. %q", len(failures), len(store.writes), failures[0])
	}
	if final := store.rollup; final == nil || final.Count != int64(len(store.writes)) {
		t.Errorf("final roll-up %+v, want the count of all %d writes", final, len(store.writes))
	}
	if most := int(duration/interval) + 3; len(store.rollupWrites) > most {
		t.Errorf("%d roll-up writes in %s, want at most about one an interval (%d)", len(store.rollupWrites), duration, most)
	}
}
