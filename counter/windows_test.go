package counter_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// setClock is a clock the test sets; its After waits in real time (group commit's interval).
type setClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *setClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *setClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *setClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// wantBuckets fails unless counter id holds want[window][label] in each bucket.
func wantBuckets(t *testing.T, store *counter.Store, id string, want map[string]map[string]int64) {
	t.Helper()
	for w, labels := range want {
		for label, n := range labels {
			got, err := store.Reader.WindowCount(context.Background(), id, w, label)
			if err != nil || got != n {
				t.Errorf("%s bucket %s = %d (%v), want %d", w, label, got, err, n)
			}
		}
	}
}

// TestWindowBucketsSplitAtUTCBoundaries: increments before and after midnight UTC at the turn of a
// month land in the buckets of the Store's clock at their commit, and the current bucket follows it.
func TestWindowBucketsSplitAtUTCBoundaries(t *testing.T) {
	ctx := context.Background()
	clock := &setClock{now: time.Date(2026, 11, 30, 23, 59, 59, 900e6, time.UTC)}
	// A zone east of UTC: labels are UTC whatever the instance's zone.
	clock.set(clock.Now().In(time.FixedZone("UTC+9", 9*3600)))
	store := counter.NewStore(testenv.Firestore(t), schema, counter.Options{DefaultNumShards: 4, ShardCountCacheTTL: time.Minute, Clock: clock})
	cfg, err := store.Lifecycle.Configure(ctx, "views", counter.Settings{NumShards: 4, Windows: []string{"month", "hour", "day", "day"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"hour", "day", "month"}; !equal(cfg.Windows, want) {
		t.Errorf("windows %v, want %v (each once, shortest first)", cfg.Windows, want)
	}
	for range 3 {
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "views", Delta: 2}); err != nil {
			t.Fatal(err)
		}
	}
	clock.set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for range 5 {
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "views", Delta: 1}); err != nil {
			t.Fatal(err)
		}
	}
	wantBuckets(t, store, "views", map[string]map[string]int64{
		"hour":  {"2026-11-30T23": 6, "2026-12-01T00": 5, "2026-12-01T01": 0},
		"day":   {"2026-11-30": 6, "2026-12-01": 5},
		"month": {"2026-11": 6, "2026-12": 5},
	})
	if sum, err := store.Reader.Sum(ctx, "views"); err != nil || sum != 11 {
		t.Errorf("all time %d (%v), want 11", sum, err)
	}
	v, err := store.Reader.WindowValue(ctx, "views", "day", "")
	if err != nil || v.Bucket != "2026-12-01" || v.Count != 5 {
		t.Errorf("current day = %+v (%v), want bucket 2026-12-01 count 5", v, err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestWindowCountsAreExactUnderFaultsAndConcurrency: concurrent increments through group commit,
// with about a third of the commits' answers lost (the emulator applied them), leave every bucket equal to
// the all-time count: each bucket's increment is in the commit of the shard's, settled the same way.
func TestWindowCountsAreExactUnderFaultsAndConcurrency(t *testing.T) {
	ctx := context.Background()
	db := testenv.FirestoreBehindFaultProxy(t)
	clock := &setClock{now: time.Date(2026, 11, 23, 18, 30, 0, 0, time.UTC)}
	opts := counter.Options{DefaultNumShards: 8, ShardCountCacheTTL: time.Minute, GroupCommitInterval: 20 * time.Millisecond, DedupeTTL: time.Hour, Clock: clock}
	exact := counter.NewStore(db.Direct, schema, counter.Options{DefaultNumShards: 8})
	if _, err := exact.Lifecycle.Configure(ctx, "hot", counter.Settings{NumShards: 8, Windows: []string{"hour", "day", "month"}}); err != nil {
		t.Fatal(err)
	}
	// Two instances sharing the database.
	stores := []*counter.Store{counter.NewStore(db.Client, schema, opts), counter.NewStore(db.Client, schema, opts)}
	db.Proxy.SetFaults(faultproxy.Faults{DropResponseRate: 0.3, Match: []byte("/shards/")})
	var acked, unknown atomic.Int64
	var wg sync.WaitGroup
	for i := range 300 {
		if i%20 == 0 { // waves, so that there are many group commits to lose answers of
			time.Sleep(25 * time.Millisecond)
		}
		wg.Go(func() {
			_, err := stores[i%2].Increments.Increment(ctx, counter.Request{Counter: "hot", Delta: 1})
			switch {
			case err == nil:
				acked.Add(1)
			case errors.Is(err, counter.ErrOutcomeUnknown):
				unknown.Add(1)
			case !errors.Is(err, counter.ErrNotApplied):
				t.Errorf("increment: %v", err)
			}
		})
	}
	wg.Wait()
	// And certainly some: the next commit's answer lost, three times.
	for range 3 {
		dropNextResponse(t, db.Proxy, "/shards/")
		if _, err := stores[0].Increments.Increment(ctx, counter.Request{Counter: "hot", Delta: 1}); err != nil {
			t.Fatalf("increment whose answer was lost: %v, want applied", err)
		}
		acked.Add(1)
	}
	db.Proxy.SetFaults(faultproxy.Faults{})
	sum, err := exact.Reader.Sum(ctx, "hot")
	if err != nil {
		t.Fatal(err)
	}
	if sum < acked.Load() || sum > acked.Load()+unknown.Load() {
		t.Fatalf("all time %d, want the %d acknowledged (+ up to %d unknown)", sum, acked.Load(), unknown.Load())
	}
	wantBuckets(t, exact, "hot", map[string]map[string]int64{"hour": {"2026-11-23T18": sum}, "day": {"2026-11-23": sum}, "month": {"2026-11": sum}})
	if n := db.Proxy.Counts().DroppedResponses; n < 3 {
		t.Errorf("the proxy dropped %d answers, want at least 3", n)
	}
	t.Logf("%d acknowledged, %d unknown, %d answers dropped", acked.Load(), unknown.Load(), db.Proxy.Counts().DroppedResponses)
}

// TestConfiguringWindowsOnALiveCounterLosesNothing: windows added, the shard count shrunk (folding
// shards) and the windows removed while increments flow; the all-time count is exact throughout,
// increments after the change count in the bucket, and counted buckets stay.
func TestConfiguringWindowsOnALiveCounterLosesNothing(t *testing.T) {
	ctx := context.Background()
	clock := &setClock{now: time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)}
	store := counter.NewStore(testenv.Firestore(t), schema, counter.Options{DefaultNumShards: 8, ShardCountCacheTTL: time.Minute, GroupCommitInterval: 10 * time.Millisecond, Clock: clock})
	if _, err := store.Lifecycle.Configure(ctx, "live", counter.Settings{NumShards: 8}); err != nil {
		t.Fatal(err)
	}
	var acked atomic.Int64
	increment := func(n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "live", Delta: 1}); err != nil {
					t.Error(err)
					return
				}
				acked.Add(1)
			})
		}
		wg.Wait()
	}
	increment(40) // before any window: all time only
	var changes sync.WaitGroup
	changes.Go(func() { increment(60) })
	if _, err := store.Lifecycle.Configure(ctx, "live", counter.Settings{Windows: []string{"day"}}); err != nil {
		t.Fatal(err)
	}
	changes.Wait()
	before, err := store.Reader.WindowCount(ctx, "live", "day", "2026-11-23")
	if err != nil {
		t.Fatal(err)
	}
	increment(50) // all of them after the change
	changes.Go(func() { increment(50) })
	// A shrink folds shards 2..7, buckets with them, while increments arrive.
	if _, err := store.Lifecycle.Configure(ctx, "live", counter.Settings{NumShards: 2}); err != nil {
		t.Fatal(err)
	}
	changes.Wait()
	wantBuckets(t, store, "live", map[string]map[string]int64{"day": {"2026-11-23": before + 100}})
	if _, err := store.Lifecycle.Configure(ctx, "live", counter.Settings{Windows: []string{}}); err != nil {
		t.Fatal(err)
	}
	increment(10)
	wantBuckets(t, store, "live", map[string]map[string]int64{"day": {"2026-11-23": before + 100}})
	if sum, err := store.Reader.Sum(ctx, "live"); err != nil || sum != acked.Load() || sum != 210 {
		t.Errorf("all time %d (%v), acknowledged %d, want 210", sum, err, acked.Load())
	}
	if _, err := store.Reader.WindowValue(ctx, "live", "day", ""); err == nil {
		t.Error("the current day of a counter without the day window answered, want a field error")
	}
	if v, err := store.Reader.WindowValue(ctx, "live", "day", "2026-11-23"); err != nil || v.Count != before+100 {
		t.Errorf("a past day of a removed window = %+v (%v), want %d", v, err, before+100)
	}
}

// TestIncrementsSharingAGroupWriteCountInTheBucketsOfTheirOwnTimes: keyed increments made on
// either side of midnight (At, as Pub/Sub messages by their publish time) and a plain one
// share one group commit planned after midnight (the Store's clock): each counts in the buckets of its own time, and a
// redelivery of one counts nothing.
func TestIncrementsSharingAGroupWriteCountInTheBucketsOfTheirOwnTimes(t *testing.T) {
	ctx := context.Background()
	clock := &setClock{now: time.Date(2026, 12, 1, 0, 0, 0, 200e6, time.UTC)}
	client := testenv.Firestore(t)
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 1, ShardCountCacheTTL: time.Minute,
		GroupCommitInterval: 300 * time.Millisecond, DedupeTTL: time.Hour, Clock: clock})
	if _, err := store.Lifecycle.Configure(ctx, "views", counter.Settings{NumShards: 1, Windows: []string{"hour", "day"}}); err != nil {
		t.Fatal(err)
	}
	// A first write commits at once; those that follow within the interval share the next one.
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "views", Delta: 1}); err != nil {
		t.Fatal(err)
	}
	before, after := time.Date(2026, 11, 30, 23, 59, 59, 900e6, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 100e6, time.UTC)
	var wg sync.WaitGroup
	apply := func(id string, at time.Time, delta int64) {
		wg.Go(func() {
			if _, err := store.Increments.Increment(ctx, counter.Request{Key: &counter.Key{Source: counter.SourcePubSub, ID: id}, At: at, Counter: "views", Delta: delta}); err != nil {
				t.Error(err)
			}
		})
	}
	apply("m1", before, 2)
	apply("m2", after, 3)
	apply("m3", before, 7)
	wg.Go(func() {
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "views", Delta: 5}); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	apply("m1", before, 2) // redelivered
	wg.Wait()
	wantBuckets(t, store, "views", map[string]map[string]int64{
		"hour": {"2026-11-30T23": 9, "2026-12-01T00": 9},
		"day":  {"2026-11-30": 9, "2026-12-01": 9},
	})
	if sum, err := store.Reader.Sum(ctx, "views"); err != nil || sum != 18 {
		t.Errorf("all time %d (%v), want 18", sum, err)
	}
	if snap, err := schema.ShardRef(client, "views", 0).Get(ctx); err != nil || snap.Data()[shared.FieldWrites] != int64(2) {
		t.Errorf("shard writes %v (%v), want 2: the first increment's, and one the next four share", snap.Data()[shared.FieldWrites], err)
	}
}
