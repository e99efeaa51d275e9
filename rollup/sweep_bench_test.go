package rollup_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
)

// sweepCounters is how many changed counters BenchmarkSweepChangedCounters sweeps.
var sweepCounters = flag.Int("sweep-counters", 10_000, "changed counters per sweep in BenchmarkSweepChangedCounters")

// BenchmarkSweepChangedCounters measures one scheduled sweep (one tick, with the default time budget)
// over 10,000 counters changed since the previous tick, on the emulator: the counters it checked, its
// reads (reads/tick and reads/counter) and how long it took. A tick that runs out of time saves its
// place (the next resumes there); it must end within the budget and a page. "rolled-up": triggers kept every roll-up right, as they normally do, so the sweep
// only checks. "stale": every roll-up missed its last change, so the sweep rolls every counter up.
// Run with: make build && bin/localstack exec -- go test -run '^$' -bench SweepChangedCounters -benchtime 1x ./rollup/
func BenchmarkSweepChangedCounters(b *testing.B) {
	for _, stale := range []bool{false, true} {
		name := "rolled-up"
		if stale {
			name = "stale"
		}
		b.Run(fmt.Sprintf("%s/%d", name, *sweepCounters), func(b *testing.B) { benchmarkSweep(b, *sweepCounters, stale) })
	}
}

func benchmarkSweep(b *testing.B, changed int, stale bool) {
	ctx := context.Background()
	client := testenv.Firestore(b)
	engine := rollup.NewEngine(client, schema, newCounters(client), time.Second)
	minute := shared.UnixMinute(time.Now())
	bulk := client.BulkWriter(ctx)
	for i := range changed {
		id := fmt.Sprintf("c-%05d", i)
		writes := []struct {
			path   string
			fields map[string]any
		}{
			{"counter", map[string]any{shared.FieldNumShards: 10, shared.FieldTouchedMinute: minute}},
			{"shard", map[string]any{shared.FieldCount: 7, shared.FieldWrites: 1}},
		}
		for _, w := range writes {
			ref := schema.CounterRef(client, id)
			if w.path == "shard" {
				ref = schema.ShardRef(client, id, 3)
			}
			if _, err := bulk.Set(ref, w.fields); err != nil {
				b.Fatal(err)
			}
		}
		count := int64(7)
		if stale {
			count = 6
		}
		// Written by the trigger within the counter's touched minute, as a roll-up usually is.
		if _, err := bulk.Set(schema.RollupRef(client, id), map[string]any{shared.FieldCount: count, shared.FieldUpdatedAt: time.Unix(minute*60, 0)}); err != nil {
			b.Fatal(err)
		}
	}
	bulk.End()
	b.ResetTimer()
	var res rollup.SweepResult
	for range b.N {
		b.StopTimer()
		if _, err := schema.SweepStateRef(client).Delete(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		var err error
		if res, err = engine.Sweep(ctx, 10*time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.Logf("sweep of %d changed counters: %+v in %s", changed, res, (b.Elapsed() / time.Duration(b.N)).Round(time.Millisecond))
	b.ReportMetric(float64(res.Counters), "counters/tick")
	b.ReportMetric(float64(res.Reads), "reads/tick")
	b.ReportMetric(float64(res.Reads)/float64(max(1, res.Counters)), "reads/counter")
	b.ReportMetric(float64(res.Written), "writes/tick")
	if res.Counters == 0 || (res.Done && res.Counters != changed) {
		b.Errorf("sweep %+v, want all %d counters, or some and not done", res, changed)
	}
}
