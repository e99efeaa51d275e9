package sources_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/sources"
)

// countInOrder counts writes once each, in order, on counting; it returns their outcomes.
func countInOrder(t *testing.T, counting *sources.Counting, writes ...sources.Write) sources.Outcomes {
	t.Helper()
	var total sources.Outcomes
	for _, w := range writes {
		o, err := counting.Count(context.Background(), w)
		if err != nil {
			t.Fatalf("count %s: %v", w.Path, err)
		}
		total.Counted += o.Counted
		total.OutOfRange += o.OutOfRange
	}
	return total
}

// verifyExact checks that Verify finds counter id equal to want and to its documents less what it
// leaves out.
func verifyExact(t *testing.T, counting *sources.Counting, id string, want int64) {
	t.Helper()
	drift, err := counting.Verify(context.Background(), id, time.Now())
	if err != nil {
		t.Fatalf("verify %s: %v", id, err)
	}
	if drift.Value != want || drift.Documents != want {
		t.Errorf("verify %s: counter %d, documents less what it leaves out %d; want both %d", id, drift.Value, drift.Documents, want)
	}
}

// TestSumsPastInt64CountZeroAndStayReadable: a document that would take a sum past int64, from
// the base or in a change, counts 0 and is reported; the counter stays readable and exact against
// its documents less those, Verify agrees, and a later write or Repair counts the document again
// once the total has room.
func TestSumsPastInt64CountZeroAndStayReadable(t *testing.T) {
	const big = 3 << 61 // two are past int64
	client, newInstance := project(t)
	counting := newInstance()
	sum := sumOf(t, client)
	ctx := context.Background()
	w := newWriter(t, client)
	a := w.set("shops/s0/orders/a", map[string]any{"paid": true, "amount": int64(big)})
	w.set("shops/s0/orders/b", map[string]any{"paid": true, "amount": int64(big)})
	countInOrder(t, counting, a) // the base holds both: b, read second, counts 0
	if got := sum("revenue-s0"); got != big {
		t.Fatalf("after a base of two documents of %d: revenue-s0 = %d, want %d (the second counts 0)", int64(big), got, int64(big))
	}
	verifyExact(t, counting, "revenue-s0", big)

	c := w.set("shops/s0/orders/c", map[string]any{"paid": true, "amount": int64(1 << 62)})
	if o := countInOrder(t, counting, c); o.OutOfRange != 1 {
		t.Errorf("a change past int64: %+v, want it reported out of range", o)
	}
	if got := sum("revenue-s0"); got != big {
		t.Errorf("after a change past int64: revenue-s0 = %d, want %d (c counts 0)", got, int64(big))
	}
	verifyExact(t, counting, "revenue-s0", big)

	// Room again: b's next write counts its new value in full; c counts 0 until written or repaired.
	countInOrder(t, counting, w.set("shops/s0/orders/a", nil), w.set("shops/s0/orders/b", map[string]any{"paid": true, "amount": 5}))
	if got := sum("revenue-s0"); got != 5 {
		t.Errorf("a deleted, b written 5: revenue-s0 = %d, want 5", got)
	}
	verifyExact(t, counting, "revenue-s0", 5)
	if err := counting.Repair(ctx, "revenue-s0"); err != nil {
		t.Fatal(err)
	}
	want := aggregate(t, client, "shops/s0/orders", true)
	if got := sum("revenue-s0"); got != want || want != 5+1<<62 {
		t.Errorf("after repair: revenue-s0 = %d, sum() = %d, want both %d", got, want, int64(5+1<<62))
	}
	verifyExact(t, counting, "revenue-s0", 5+1<<62)
}

// TestAnUpdateAcrossInt64CountsExactly: an update whose difference leaves int64 (from near +2^63 to
// near −2^63) counts exactly, and no shard saturates; the base of a small sum writes one shard.
func TestAnUpdateAcrossInt64CountsExactly(t *testing.T) {
	client, newInstance := project(t)
	counting := newInstance()
	w := newWriter(t, client)
	countInOrder(t, counting, w.set("shops/s0/orders/seed", map[string]any{"paid": true, "amount": 1}))
	shards, err := client.Collection("counters/revenue-s0/shards").Documents(context.Background()).GetAll()
	written := 0
	for _, shard := range shards {
		if n, _ := shard.Data()["writes"].(int64); n > 0 {
			written++
		}
	}
	if err != nil || written != 1 {
		t.Errorf("a small sum's base wrote %d shards (%v), want 1: only a sum near int64 has its shards evened out", written, err)
	}
	writes := []sources.Write{
		w.set("shops/s0/orders/x", map[string]any{"paid": true, "amount": int64(math.MaxInt64 - 1)}),
		w.set("shops/s0/orders/seed", nil),
		w.set("shops/s0/orders/x", map[string]any{"paid": true, "amount": int64(-math.MaxInt64 + 1)}),
		w.set("shops/s0/orders/y", map[string]any{"paid": true, "amount": int64(math.MaxInt64 - 1)}),
		w.set("shops/s0/orders/z", map[string]any{"paid": true, "amount": 7}),
	}
	if o := countInOrder(t, counting, writes...); o.OutOfRange != 0 {
		t.Errorf("%+v: nothing here leaves int64", o)
	}
	want := aggregate(t, client, "shops/s0/orders", true)
	if got := sumOf(t, client)("revenue-s0"); got != want || want != 7 {
		t.Errorf("revenue-s0 = %d, sum() = %d, want both 7", got, want)
	}
	verifyExact(t, counting, "revenue-s0", 7)
}

// TestNoShardOfASumSaturates: with one shard holding nearly +2^63 and another nearly −2^63 (the
// total small), changes adding to the sum never land where the shard would pass int64, where
// Firestore's increment would saturate it.
func TestNoShardOfASumSaturates(t *testing.T) {
	client, newInstance := project(t)
	counting := newInstance()
	w := newWriter(t, client)
	countInOrder(t, counting, w.set("shops/s0/orders/seed", map[string]any{"paid": true, "amount": 1}))
	ctx := context.Background()
	for shard, v := range map[string]int64{"0": math.MaxInt64 - 5, "1": -(math.MaxInt64 - 5)} {
		// Moved between shards behind the counter's back: its value stays.
		if _, err := client.Doc("counters/revenue-s0/shards/"+shard).Set(ctx, map[string]any{"count": firestore.Increment(v)}, firestore.MergeAll); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		countInOrder(t, counting, w.set(fmt.Sprintf("shops/s0/orders/o%d", i), map[string]any{"paid": true, "amount": 10}))
	}
	want := aggregate(t, client, "shops/s0/orders", true)
	if got := sumOf(t, client)("revenue-s0"); got != want || want != 201 {
		t.Errorf("revenue-s0 = %d, sum() = %d, want both 201", got, want)
	}
}

// TestAShrinkSendsASumToTheSlowPath: a shrink folds shards together, maybe past the bound each
// shard keeps on the fast path, so it marks the counter for the path that reads every shard; the
// sum stays exact through it.
func TestAShrinkSendsASumToTheSlowPath(t *testing.T) {
	client, newInstance := project(t)
	counting := newInstance()
	w := newWriter(t, client)
	for i := range 6 {
		countInOrder(t, counting, w.set(fmt.Sprintf("shops/s0/orders/o%d", i), map[string]any{"paid": true, "amount": int64(1) << 49}))
	}
	ctx := context.Background()
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 3})
	if _, err := store.Lifecycle.Configure(ctx, "revenue-s0", counter.Settings{NumShards: 1}); err != nil {
		t.Fatal(err)
	}
	snap, err := client.Doc("counters/revenue-s0").Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Data()["sum_wide"] != true {
		t.Errorf("after a shrink: %v, want sum_wide true", snap.Data())
	}
	countInOrder(t, counting, w.set("shops/s0/orders/o0", nil), w.set("shops/s0/orders/o9", map[string]any{"paid": true, "amount": 3}))
	want := aggregate(t, client, "shops/s0/orders", true)
	if got := sumOf(t, client)("revenue-s0"); got != want || want != 5<<49+3 {
		t.Errorf("revenue-s0 = %d, sum() = %d, want both %d", got, want, int64(5<<49+3))
	}
}

// TestSumsNearInt64StayExactAcrossInstances: orders written with amounts near ±2^62, their events
// duplicated and shuffled over four instances, leave the counter within int64 and equal to its
// documents less what it records as left out, both before and after a repair.
func TestSumsNearInt64StayExactAcrossInstances(t *testing.T) {
	clients, instances, _ := recordedInstances(t, 4, func(c *firestore.Client, set *sources.Set) *sources.Counting {
		return instanceOf(t, c, set)
	})
	w := newWriter(t, clients[0])
	w.set("shops/s0/orders/seed", map[string]any{"paid": true, "amount": 1})
	deliver(t, w.writes, instances[0])
	amounts := []int64{1 << 62, -(1 << 62), 3 << 61, -(3 << 61), 7, -7, math.MaxInt64 - 1, -(math.MaxInt64 - 1)}
	for i := range 40 {
		path := fmt.Sprintf("shops/s0/orders/o%d", i%15)
		if i%7 == 6 {
			w.set(path, nil)
			continue
		}
		w.set(path, map[string]any{"paid": true, "amount": amounts[(i*5)%len(amounts)]})
	}
	if o := deliver(t, w.writes[1:], instances...); o.OutOfRange == 0 {
		t.Errorf("%+v: no change was past int64; the test tests nothing", o)
	}
	ctx := context.Background()
	verifyExact(t, instances[1], "revenue-s0", sumOf(t, clients[0])("revenue-s0"))
	if err := instances[2].Repair(ctx, "revenue-s0"); err != nil {
		t.Fatal(err)
	}
	verifyExact(t, instances[3], "revenue-s0", sumOf(t, clients[0])("revenue-s0"))
}
