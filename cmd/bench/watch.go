package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/loadreport"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
)

// watcher samples a run while it goes: roll-up ages during the load, and each second the shard
// counts (and, for Pub/Sub, the exact count) for the timeline; it prints progress and kills a
// functions process once if asked.
type watcher struct {
	o      options
	s      *stack
	client *firestore.Client
	ids    []string
	// countExact makes each second's Acknowledged the growth of the exact count (Pub/Sub), rather
	// than the acknowledgements clients received (HTTP).
	countExact bool

	mu      sync.Mutex
	t0      time.Time
	seconds []loadreport.Second
	ages    []time.Duration
	// behind are roll-up ages across counters (see loadreport.Run.RollupAgeP50); acks are, per
	// counter, when each of its increments was acknowledged.
	behind   []time.Duration
	acks     [][]time.Time
	loadOver bool
	killed   bool
	exact    int64 // the exact total at the last sample
	recorder *recorder

	quit, done chan struct{}
}

func newWatcher(o options, s *stack, client *firestore.Client, ids []string, countExact bool) *watcher {
	return &watcher{o: o, s: s, client: client, ids: ids, countExact: countExact, acks: make([][]time.Time, len(ids)),
		quit: make(chan struct{}), done: make(chan struct{})}
}

// start begins sampling, with second 0 starting at t0.
func (w *watcher) start(t0 time.Time, t *recorder) {
	w.t0, w.recorder = t0, t
	go w.loop()
}

// second returns the timeline entry of t, growing the timeline as needed. Call with w.mu held.
func (w *watcher) second(t time.Time) *loadreport.Second {
	i := max(0, int(t.Sub(w.t0)/time.Second))
	for len(w.seconds) <= i {
		w.seconds = append(w.seconds, loadreport.Second{T: len(w.seconds)})
	}
	return &w.seconds[i]
}

// offered counts an increment started (or a message published) at t.
func (w *watcher) offered(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.second(t).Offered++
}

// acknowledged counts an increment of counter k acknowledged at t (HTTP only: Pub/Sub counts the
// exact count).
func (w *watcher) acknowledged(k int, t time.Time) {
	if w.countExact {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.second(t).Acknowledged++
	w.acks[k] = append(w.acks[k], t)
}

// loadEnded stops the roll-up age samples: after the load a roll-up rightly stays as it is.
func (w *watcher) loadEnded() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.loadOver = true
}

// stop ends sampling and makes the timeline span exactly [t0, end), its last second with the shard
// count at end, and seconds that were not sampled with the count sampled before them.
func (w *watcher) stop(end time.Time) {
	close(w.quit)
	<-w.done
	shards := w.shardCount(context.Background())
	w.mu.Lock()
	defer w.mu.Unlock()
	n := max(1, int((end.Sub(w.t0)+time.Second-1)/time.Second))
	w.second(w.t0.Add(time.Duration(n-1) * time.Second))
	w.seconds = w.seconds[:n]
	w.seconds[n-1].Shards = shards
	for i := 1; i < n; i++ {
		if w.seconds[i].Shards == 0 {
			w.seconds[i].Shards = w.seconds[i-1].Shards
		}
	}
}

func (w *watcher) loop() {
	defer close(w.done)
	ctx := context.Background()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	nextSecond := w.t0.Add(time.Second)
	for {
		select {
		case <-w.quit:
			return
		case now := <-ticker.C:
			w.mu.Lock()
			over := w.loadOver
			w.mu.Unlock()
			if !over {
				w.sampleAges(ctx, now)
			}
			if w.o.killAt > 0 && !w.killed && now.Sub(w.t0) >= w.o.killAt {
				w.killed = true
				err := w.s.killFunctions()
				fmt.Fprintf(os.Stderr, "  killed a functions process at %s (err: %v)\n", now.Sub(w.t0).Round(time.Second), err)
			}
			if now.Before(nextSecond) {
				continue
			}
			w.sampleSecond(ctx, nextSecond.Add(-time.Second))
			nextSecond = nextSecond.Add(time.Second)
		}
	}
}

// ageSample is how many counters one roll-up age sample reads at most.
const ageSample = 200

// sampleAges records now - updated_at of the roll-ups, and their age behind the acknowledged
// increments, of up to ageSample counters (at random among those written, when there are more).
func (w *watcher) sampleAges(ctx context.Context, now time.Time) {
	w.mu.Lock()
	var ks []int
	for k := range w.ids {
		if len(w.acks[k]) > 0 {
			ks = append(ks, k)
		}
	}
	w.mu.Unlock()
	if len(ks) > ageSample {
		rand.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
		ks = ks[:ageSample]
	}
	schema := config.Default().Schema()
	refs := make([]*firestore.DocumentRef, len(ks))
	for i, k := range ks {
		refs[i] = schema.RollupRef(w.client, w.ids[k])
	}
	snaps, err := w.client.GetAll(ctx, refs)
	if err != nil || len(ks) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, snap := range snaps {
		var d rollup.Document
		if snap.Exists() {
			if snap.DataTo(&d) != nil {
				continue
			}
			w.ages = append(w.ages, now.Sub(d.UpdatedAt))
		}
		behind := time.Duration(0)
		if acks := w.acks[ks[i]]; d.Count >= 0 && int(d.Count) < len(acks) {
			behind = now.Sub(acks[d.Count])
		}
		w.behind = append(w.behind, behind)
	}
}

// sampleSecond fills the shard count (and for Pub/Sub the exact count's growth) of the second that
// starts at t, and prints a progress line.
func (w *watcher) sampleSecond(ctx context.Context, t time.Time) {
	shards := w.shardCount(ctx)
	var exact int64
	if w.countExact {
		exact = w.exactTotal(ctx)
	}
	w.mu.Lock()
	sec := w.second(t)
	sec.Shards = shards
	if w.countExact && exact >= 0 {
		sec.Acknowledged = exact - w.exact
		w.exact = exact
	}
	line := *sec
	w.mu.Unlock()
	recent := w.recorder.recentLatencies(2000)
	fmt.Fprintf(os.Stderr, "  %3ds  offered %6d/s  acknowledged %6d/s  shards %3d  latency p50 %s p99 %s\n", line.T, line.Offered, line.Acknowledged,
		line.Shards, loadreport.Percentile(recent, 0.5).Round(time.Millisecond), loadreport.Percentile(recent, 0.99).Round(time.Millisecond))
}

// shardCount is the largest num_shards of the counters, read from counters/{id}.
func (w *watcher) shardCount(ctx context.Context) int {
	schema := config.Default().Schema()
	refs := make([]*firestore.DocumentRef, len(w.ids))
	for i, id := range w.ids {
		refs[i] = schema.CounterRef(w.client, id)
	}
	snaps, err := w.client.GetAll(ctx, refs)
	if err != nil {
		return 0
	}
	most := 0
	for _, snap := range snaps {
		if v, err := snap.DataAt(shared.FieldNumShards); err == nil {
			if n, ok := v.(int64); ok {
				most = max(most, int(n))
			}
		}
	}
	return most
}

// exactTotal is the sum of every shard of every counter (one aggregation query), -1 on error.
func (w *watcher) exactTotal(ctx context.Context) int64 {
	res, err := w.client.CollectionGroup(shared.ShardsCollection).NewAggregationQuery().WithSum(shared.FieldCount, "n").Get(ctx)
	if err != nil {
		return -1
	}
	return aggregateInt(res["n"])
}

// aggregateInt reads a sum aggregation's value, which the client returns as a protobuf value.
func aggregateInt(v any) int64 {
	switch v := v.(type) {
	case interface{ GetIntegerValue() int64 }:
		return v.GetIntegerValue()
	case int64:
		return v
	}
	return -1
}
