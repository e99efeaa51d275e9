package rollup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
)

// TestSweepSkipsACounterThatCannotBeSummed: a counter whose shard holds 1.5 (a console edit) is
// skipped with its ID and why, not retried: the sweep rolls up the others, saves its progress, and
// the next tick starts from there instead of re-reading every counter changed since.
func TestSweepSkipsACounterThatCannotBeSummed(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	engine := rollup.NewEngine(client, schema, newCounters(client), 100*time.Millisecond)

	touched := shared.UnixMinute(time.Now()) - 3 // before the minutes a finished pass looks back
	ids := []string{"a", "broken", "c"}
	// Every shard has writes too: an aggregation of several sums only sees documents holding every
	// summed field.
	for _, id := range ids {
		if _, err := schema.CounterRef(client, id).Set(ctx, map[string]any{shared.FieldNumShards: 2, shared.FieldTouchedMinute: touched}); err != nil {
			t.Fatal(err)
		}
		if _, err := schema.ShardRef(client, id, 0).Set(ctx, map[string]any{shared.FieldCount: 3, shared.FieldWrites: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := schema.ShardRef(client, "broken", 1).Set(ctx, map[string]any{shared.FieldCount: 1.5, shared.FieldWrites: 1}); err != nil {
		t.Fatal(err)
	}

	first, err := engine.Sweep(ctx, 10*time.Minute)
	var skipped *rollup.SkippedError
	if !errors.As(err, &skipped) || len(skipped.Skipped) != 1 || skipped.Skipped[0].ID != "broken" ||
		!strings.Contains(skipped.Skipped[0].Reason, "4.5 is not an int64") || !errors.Is(err, counter.ErrUncountable) {
		t.Fatalf("sweep error = %v; want a SkippedError naming counter broken and its sum 4.5", err)
	}
	if shared.IsRetryable(err) {
		t.Errorf("sweep error %v is retryable; a redelivery cannot fix the shard", err)
	}
	if !first.Done || first.Counters != len(ids) || first.Skipped != 1 || first.Written != len(ids)-1 {
		t.Errorf("first sweep %+v, want done over %d counters, 1 skipped, the others written", first, len(ids))
	}
	for _, id := range []string{"a", "c"} {
		if d := readRollup(t, client, id); d == nil || d.Count != 3 {
			t.Errorf("roll-up of %s = %+v, want count 3 despite the broken counter", id, d)
		}
	}
	second, err := engine.Sweep(ctx, 10*time.Minute)
	if err != nil || !second.Done || second.Counters != 0 {
		t.Errorf("next sweep %+v, %v; want done over no counters (progress saved past the broken one)", second, err)
	}
}

// TestValueNamesTheShardThatCannotBeSummed: Value fails with an UncountableError naming the shard
// and what it holds; Sum and SumsAt fail with ErrUncountable.
func TestValueNamesTheShardThatCannotBeSummed(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	counters := newCounters(client)
	if _, err := counters.Increments.Increment(ctx, counter.Request{Counter: "views", Delta: 3}); err != nil {
		t.Fatal(err)
	}
	written, err := schema.ShardRef(client, "views", 7).Set(ctx, map[string]any{shared.FieldCount: 1.5, shared.FieldWrites: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = counters.Reader.Value(ctx, "views")
	var uncountable *counter.UncountableError
	if !errors.As(err, &uncountable) || uncountable.Counter != "views" || uncountable.Shard != "7" || uncountable.Count != 1.5 {
		t.Fatalf("Value = %v; want an UncountableError naming shard 7 of views holding 1.5", err)
	}
	if _, err := counters.Reader.Sum(ctx, "views"); !errors.Is(err, counter.ErrUncountable) {
		t.Errorf("Sum = %v; want ErrUncountable", err)
	}
	if _, err := counters.Reader.SumsAt(ctx, "views", written.UpdateTime, nil); !errors.Is(err, counter.ErrUncountable) || shared.IsRetryable(err) {
		t.Errorf("SumsAt = %v; want ErrUncountable, not retryable", err)
	}

}

// TestSweepCutShortKeepsItsPlace: a pass whose request is cancelled mid-page (as a push whose
// request timed out: no deadline to save its progress by) fails, but keeps its place after its
// finished page; the next tick resumes there, so a counter first written after the others, whose
// event was lost, is rolled up by the next sweep instead of waiting behind a pass begun again each
// tick.
func TestSweepCutShortKeepsItsPlace(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	counters := newCounters(client)

	const older = 250 // three pages
	touched := shared.UnixMinute(time.Now()) - 3
	bulk := client.BulkWriter(ctx)
	for i := range older {
		id := fmt.Sprintf("c-%04d", i)
		if _, err := bulk.Set(schema.CounterRef(client, id), map[string]any{shared.FieldNumShards: 1, shared.FieldTouchedMinute: touched}); err != nil {
			t.Fatal(err)
		}
		if _, err := bulk.Set(schema.ShardRef(client, id, 0), map[string]any{shared.FieldCount: 1, shared.FieldWrites: 1}); err != nil {
			t.Fatal(err)
		}
	}
	bulk.End()
	if _, err := counters.Increments.Increment(ctx, counter.Request{Counter: "new", Delta: 4}); err != nil {
		t.Fatal(err)
	}

	cut, cancel := context.WithCancel(ctx)
	defer cancel()
	var written atomic.Int64
	engine := rollup.NewEngine(client, schema, counters, 100*time.Millisecond)
	engine.OnWrite(func(rollup.Written) {
		if written.Add(1) == 150 { // midway through the second page
			cancel()
		}
	})
	first, cutErr := engine.Sweep(cut, 10*time.Minute)
	if cutErr == nil || first.Done {
		t.Fatalf("sweep cancelled midway %+v, %v; want it to fail", first, cutErr)
	}
	second, err := rollup.NewEngine(client, schema, counters, 100*time.Millisecond).Sweep(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cut short: %+v (%v); next: %+v", first, cutErr, second)
	if !second.Done || second.Counters != older+1-100 {
		t.Errorf("sweep after one cut short %+v, want it done over the %d counters after the finished page", second, older+1-100)
	}
	if d := readRollup(t, client, "new"); d == nil || d.Count != 4 {
		t.Errorf("roll-up of the counter first written last = %+v, want count 4 after the next sweep", d)
	}
}
