package counter_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/testenv"
)

// TestPruneHourBucketsDeletesOnlyOldHours: hourly buckets older than HourBucketsKept are deleted from
// every shard, a month of hours per pass, while increments keep landing; newer hours, the day bucket
// and the all-time count stay exact, and a pass is due again only a day later.
func TestPruneHourBucketsDeletesOnlyOldHours(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	start := time.Now().UTC().Truncate(time.Hour).Add(10 * time.Minute)
	clock := &setClock{now: start}
	const kept = 48 * time.Hour
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 4, ShardCountCacheTTL: time.Minute, HourBucketsKept: kept, Clock: clock})
	if _, err := store.Lifecycle.Configure(ctx, "views", counter.Settings{NumShards: 4, Windows: []string{"hour", "day"}}); err != nil {
		t.Fatal(err)
	}
	hour := func(h int) time.Time { return start.Add(time.Duration(h) * time.Hour) }
	for _, h := range []int{0, 1, 40 * 24} {
		clock.set(hour(h))
		for range 8 {
			if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "views", Delta: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	label := func(h int) string { return counter.Bucket(counter.WindowHour, hour(h)) }
	counterDoc := func() bool {
		t.Helper()
		snap, err := schema.CounterRef(client, "views").Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return store.Pruner.HourBucketsDue(snap, clock.Now())
	}
	clock.set(hour(1))
	if counterDoc() {
		t.Error("a pass is due on a new counter")
	}

	// 40 days on, hours 0 and 1 are older than kept, with 38 days of empty hours after them: a first
	// pass deletes 31 days of hours, the second the rest, while increments count in the current hour.
	clock.set(hour(40*24 + 2))
	if !counterDoc() {
		t.Fatal("no pass due 40 days on")
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 20 {
			if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "views", Delta: 1}); err != nil {
				t.Error(err)
			}
		}
	})
	passes := []int{}
	for {
		n, err := store.Pruner.PruneHourBuckets(ctx, "views", clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		passes = append(passes, n)
	}
	wg.Wait()
	// Hours 0 .. 40*24+2-48 = 914 are pruned: 744, then 170.
	if len(passes) != 2 || passes[0] != 31*24 || passes[1] != 40*24+2-48-31*24 {
		t.Errorf("passes pruned %v hours, want [744 170]", passes)
	}
	wantBuckets(t, store, "views", map[string]map[string]int64{
		"hour": {label(0): 0, label(1): 0, label(40 * 24): 8, label(40*24 + 2): 20},
		"day":  {counter.Bucket(counter.WindowDay, hour(0)): int64(8 * countInDay(start, 2))},
	})
	if got := sum(t, store, "views"); got != 44 {
		t.Errorf("views = %d after pruning, want 44", got)
	}
	if counterDoc() {
		t.Error("a pass is due right after one")
	}
	clock.set(hour(41*24 + 3))
	if !counterDoc() {
		t.Error("no pass due a day after the last")
	}
}

// countInDay is how many of the n hours from start fall on start's UTC day.
func countInDay(start time.Time, n int) int {
	c := 0
	for h := range n {
		if start.Add(time.Duration(h)*time.Hour).Day() == start.Day() {
			c++
		}
	}
	return c
}
