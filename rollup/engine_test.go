package rollup_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
)

var schema = config.Default().Schema()

func newCounters(client *firestore.Client) *counter.Store {
	return counter.NewStore(client, schema, counter.Options{DefaultNumShards: 10, ShardCountCacheTTL: time.Minute})
}

func readRollup(t *testing.T, client *firestore.Client, id string) *rollup.Document {
	t.Helper()
	d, err := rollup.NewStore(client, schema).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRefreshWritesTheExactSumOnceAndThenIsCovered(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	counters := newCounters(client)
	engine := rollup.NewEngine(client, schema, counters, 200*time.Millisecond)
	for _, d := range []int64{5, 7, -2} {
		if _, err := counters.Increments.Increment(ctx, counter.Request{Counter: "likes", Delta: d}); err != nil {
			t.Fatal(err)
		}
	}
	changed := time.Now()
	outcome, err := engine.Refresh(ctx, "likes", changed, rollup.SourceTrigger)
	if err != nil || outcome != rollup.Wrote {
		t.Fatalf("first refresh: %v, %v; want Wrote", outcome, err)
	}
	d := readRollup(t, client, "likes")
	if d.Count != 10 || d.Revision != 1 || d.Source != rollup.SourceTrigger || !d.UpdatedAt.After(changed) {
		t.Fatalf("roll-up %+v, want count 10, revision 1, source trigger, computed after the change", d)
	}
	// A duplicate of an event seen before that computation is covered: nothing is written.
	outcome, err = engine.Refresh(ctx, "likes", changed.Add(-time.Second), rollup.SourceTrigger)
	if err != nil || outcome != rollup.Covered {
		t.Fatalf("duplicate refresh: %v, %v; want Covered", outcome, err)
	}
	if d := readRollup(t, client, "likes"); d.Revision != 1 {
		t.Errorf("a covered refresh wrote: revision %d", d.Revision)
	}
}

// TestRefreshThrottlesAcrossInstancesAndNeverGoesBack drives four engines (four function instances)
// with a stream of refreshes while increments arrive, and watches the roll-up document: at most one
// write per interval, the count never goes back (positive increments only), updated_at only moves
// forward, and the last roll-up is exact.
func TestRefreshThrottlesAcrossInstancesAndNeverGoesBack(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	counters := newCounters(client)
	const interval = 200 * time.Millisecond
	const id = "hot"
	if _, err := counters.Lifecycle.Configure(ctx, id, counter.Settings{NumShards: 10}); err != nil {
		t.Fatal(err)
	}

	// Watch every state of the roll-up document, in order.
	var (
		mu     sync.Mutex
		states []rollup.Document
	)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		it := schema.RollupRef(client, id).Snapshots(watchCtx)
		defer it.Stop()
		for {
			snap, err := it.Next()
			if err != nil {
				return
			}
			var d rollup.Document
			if snap.Exists() && snap.DataTo(&d) == nil {
				mu.Lock()
				states = append(states, d)
				mu.Unlock()
			}
		}
	}()

	var expected atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(3 * time.Second)
	for i := range 4 {
		engine := rollup.NewEngine(client, schema, counters, interval)
		for range 4 {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					delta := int64(i + 1)
					if _, err := counters.Increments.Increment(ctx, counter.Request{Counter: id, Delta: delta}); err != nil {
						t.Error(err)
						return
					}
					expected.Add(delta)
					if _, err := engine.Refresh(ctx, id, time.Now(), rollup.SourceTrigger); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)

	final := readRollup(t, client, id)
	if final.Count != expected.Load() {
		t.Errorf("after the last refresh returned, roll-up %d, want exact %d", final.Count, expected.Load())
	}
	if budget := int64(elapsed/interval) + 1; final.Revision > budget {
		t.Errorf("%d roll-up writes in %s at one per %s: over the budget of %d", final.Revision, elapsed.Round(time.Millisecond), interval, budget)
	}
	t.Logf("%d increments, %d roll-up writes in %s (budget %d)", expected.Load(), final.Revision, elapsed.Round(time.Millisecond), int64(elapsed/interval)+1)

	time.Sleep(300 * time.Millisecond) // let the listener catch up
	stopWatch()
	<-watched
	mu.Lock()
	defer mu.Unlock()
	if len(states) < 2 {
		t.Fatalf("saw %d roll-up states; the test proves nothing", len(states))
	}
	for i := 1; i < len(states); i++ {
		prev, cur := states[i-1], states[i]
		if gap := cur.UpdatedAt.Sub(prev.UpdatedAt); gap < interval {
			t.Errorf("roll-ups computed %s apart, less than the interval %s", gap, interval)
		}
		if cur.Count < prev.Count || !cur.UpdatedAt.After(prev.UpdatedAt) || cur.Revision <= prev.Revision {
			t.Errorf("roll-up went back: %+v after %+v", cur, prev)
		}
	}
}

// TestSweepRollsUpOnlyRecentlyWrittenCounters: with 1,000 idle counters and 3 active ones, and no
// trigger at all (as if every trigger event were dropped), the sweep reads only the active counters
// (one query result, one roll-up and one aggregation each) and rolls up exactly those.
func TestSweepRollsUpOnlyRecentlyWrittenCounters(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	counters := newCounters(client)
	engine := rollup.NewEngine(client, schema, counters, 100*time.Millisecond)

	idleMinute := shared.UnixMinute(time.Now().Add(-time.Hour))
	bulk := client.BulkWriter(ctx)
	for i := range 1000 {
		id := fmt.Sprintf("idle-%d", i)
		if _, err := bulk.Set(schema.CounterRef(client, id), map[string]any{shared.FieldNumShards: 1, shared.FieldTouchedMinute: idleMinute}); err != nil {
			t.Fatal(err)
		}
		if _, err := bulk.Set(schema.ShardRef(client, id, 0), map[string]any{shared.FieldCount: 1}); err != nil {
			t.Fatal(err)
		}
	}
	bulk.End()

	active := map[string]int64{"a": 0, "b": 0, "c": 0}
	for id := range active {
		for n := range 5 {
			if _, err := counters.Increments.Increment(ctx, counter.Request{Counter: id, Delta: int64(n + 1)}); err != nil {
				t.Fatal(err)
			}
			active[id] += int64(n + 1)
		}
	}

	res, err := engine.Sweep(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sweep over 1,000 idle and 3 active counters: %+v", res)
	// The state document, then per changed counter: its query result, its roll-up, one aggregation.
	if want := (rollup.SweepResult{Counters: 3, Reads: 1 + 3*3, Checked: 3, Stale: 3, Written: 3, Done: true}); res != want {
		t.Errorf("sweep %+v, want %+v", res, want)
	}
	for id, want := range active {
		if d := readRollup(t, client, id); d == nil || d.Count != want || d.Source != rollup.SourceScheduler {
			t.Errorf("roll-up of %s = %+v, want count %d from the scheduler", id, d, want)
		}
	}
	rollups, err := client.Collection(schema.Rollups).DocumentRefs(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rollups) != 3 {
		t.Errorf("%d roll-up documents, want only the 3 active counters'", len(rollups))
	}

	again, err := engine.Sweep(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if again.Counters != 3 || again.Reads > 1+3*3 || again.Stale != 0 || again.Written != 0 {
		t.Errorf("second sweep with nothing new %+v, want the 3 counters of this minute checked, nothing stale or written", again)
	}
}

// TestSweepOutOfTimeSavesItsPlaceAndTheNextResumes: a sweep whose deadline is too near checks one
// page of changed counters, saves where it stopped, and the next sweep checks exactly the rest.
func TestSweepOutOfTimeSavesItsPlaceAndTheNextResumes(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	engine := rollup.NewEngine(client, schema, newCounters(client), 100*time.Millisecond)

	const changed = 1200
	touched := shared.UnixMinute(time.Now()) - 3 // before the minutes a finished pass looks back
	bulk := client.BulkWriter(ctx)
	for i := range changed {
		id := fmt.Sprintf("c-%04d", i)
		if _, err := bulk.Set(schema.CounterRef(client, id), map[string]any{shared.FieldNumShards: 1, shared.FieldTouchedMinute: touched}); err != nil {
			t.Fatal(err)
		}
		// Rolled up after the counter's last write: covered, so the sweep needs no aggregation.
		if _, err := bulk.Set(schema.RollupRef(client, id), map[string]any{shared.FieldCount: 0, shared.FieldUpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	bulk.End()

	// A deadline no further than the margin kept to save progress: time for one page only.
	hurried, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	first, err := engine.Sweep(hurried, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	second, err := engine.Sweep(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	third, err := engine.Sweep(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("out of time: %+v; resumed: %+v; next: %+v", first, second, third)
	if first.Done || first.Counters == 0 || first.Counters >= changed {
		t.Errorf("hurried sweep %+v, want part of the %d counters and not done", first, changed)
	}
	if !second.Done || first.Counters+second.Counters != changed {
		t.Errorf("resumed sweep %+v after %d, want the other %d counters and done", second, first.Counters, changed-first.Counters)
	}
	if !third.Done || third.Counters != 0 {
		t.Errorf("sweep after a finished pass %+v, want no counters (nothing changed since)", third)
	}
}

// laggingClock is the system clock, by behind.
type laggingClock struct{ by time.Duration }

func (c laggingClock) Now() time.Time                         { return time.Now().Add(-c.by) }
func (c laggingClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// TestRollupPrunesHourBucketsKeptTooLong: the roll-up of a counter whose shards hold hourly buckets
// older than HourBucketsKept deletes them; its count and the current hour's bucket stay.
func TestRollupPrunesHourBucketsKeptTooLong(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	opts := counter.Options{DefaultNumShards: 4, ShardCountCacheTTL: time.Minute, HourBucketsKept: 48 * time.Hour}
	counters := counter.NewStore(client, schema, opts)
	opts.Clock = laggingClock{by: 50 * time.Hour}
	earlier := counter.NewStore(client, schema, opts)
	if _, err := counters.Lifecycle.Configure(ctx, "hourly", counter.Settings{Windows: []string{"hour"}}); err != nil {
		t.Fatal(err)
	}
	// As if the counter had counted hours for days: its shards may hold buckets from 80 hours ago.
	if _, err := schema.CounterRef(client, "hourly").Update(ctx, []firestore.Update{{Path: shared.FieldHoursKeptFrom, Value: time.Now().Add(-80 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	for _, inc := range []struct {
		store *counter.Store
		delta int64
	}{{earlier, 3}, {counters, 2}} {
		if _, err := inc.store.Increments.Increment(ctx, counter.Request{Counter: "hourly", Delta: inc.delta}); err != nil {
			t.Fatal(err)
		}
	}
	engine := rollup.NewEngine(client, schema, counters, 200*time.Millisecond)
	if _, err := engine.Refresh(ctx, "hourly", time.Now(), rollup.SourceTrigger); err != nil {
		t.Fatal(err)
	}
	if d := readRollup(t, client, "hourly"); d.Count != 5 {
		t.Errorf("roll-up count %d, want 5", d.Count)
	}
	for label, want := range map[string]int64{
		counter.Bucket(counter.WindowHour, time.Now().Add(-50*time.Hour)): 0,
		counter.Bucket(counter.WindowHour, time.Now()):                    2,
	} {
		if got, err := counters.Reader.WindowCount(ctx, "hourly", counter.WindowHour, label); err != nil || got != want {
			t.Errorf("hour %s = %d (%v), want %d", label, got, err, want)
		}
	}
}
