package main

import (
	"context"
	"testing"
	"time"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/loadreport"
)

// TestCollectionCountersExactWhereWriteTimeAggregationDoubleCounts is make bench's documents run,
// short: clients create and delete likes straight in Firestore and the local stack delivers every
// event twice, as at-least-once delivery may. Our collection counters must equal count() of their
// documents; the write-time aggregation of Firebase's page, fed the same duplicates, must apply
// events twice and drift from count(). Measured ratios, not times: the machine may be loaded.
func TestCollectionCountersExactWhereWriteTimeAggregationDoubleCounts(t *testing.T) {
	o := testOptions(t)
	o.clients, o.duration, o.rate = 8, 4*time.Second, 40
	o.parents, o.likers, o.copies, o.writeTimeInFlight = 4, 5, 2, 20
	runs := map[string]*loadreport.Documents{}
	hottest := map[string]loadreport.DocRate{}
	for _, mode := range []string{"collection", "write-time"} {
		run, err := runDocumentsPlan(context.Background(), o, plan{via: "documents", mode: mode, instances: 1})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		d := run.Documents
		t.Logf("%s: %d changes, %d deliveries, error %d (%d counters off), applied %d (again %d), %.2f documents per change, hottest %+v",
			mode, d.Changes, d.Deliveries, d.Error, d.Off, d.Applied, d.AppliedTwice, d.DocumentsPerChange, run.Hottest1s)
		if d.Changes < 50 || d.Deliveries == 0 {
			t.Fatalf("%s: %d changes, %d events delivered: the load or the events did not run", mode, d.Changes, d.Deliveries)
		}
		runs[mode] = d
		hottest[mode] = run.Hottest1s
	}
	ours, guide := runs["collection"], runs["write-time"]
	if ours.Error != 0 || ours.Exact != o.parents {
		t.Errorf("collection counters under duplicated events: %d of %d exact, sum of |value - count()| %d: want every one exact", ours.Exact, o.parents, ours.Error)
	}
	// A collection counter's transactions are a second apart (CHANGE_COMMIT_INTERVAL): no document of
	// ours takes two writes in one second. The write-time aggregation writes the parent per event.
	if h := hottest["collection"]; h.WritesPerSecond > 1 {
		t.Errorf("collection counters: %s took %.0f writes in one second, want at most 1", h.Document, h.WritesPerSecond)
	}
	if h := hottest["write-time"]; h.WritesPerSecond <= 1 {
		t.Errorf("write-time aggregation: hottest document %+v, want its parent above 1 write/s", h)
	}
	// Every event comes twice: the write-time aggregation applies most a second time.
	if guide.Applied == 0 || float64(guide.AppliedTwice) < 0.4*float64(guide.Applied) || guide.Error == 0 {
		t.Errorf("write-time aggregation: %d events applied, %d of them again, sum of |value - count()| %d: want about half applied again, and drift",
			guide.Applied, guide.AppliedTwice, guide.Error)
	}
}

// TestFieldCountersStayExactThroughMoves is make bench's fields run, short: flat likes counted by
// their postId field, a third of the changes moving a like to another post (-1 in one counter, +1
// in another), every event delivered twice. Each counter must equal count() of its post's likes.
func TestFieldCountersStayExactThroughMoves(t *testing.T) {
	o := testOptions(t)
	o.clients, o.duration, o.rate = 8, 4*time.Second, 40
	o.parents, o.likers, o.copies = 4, 5, 2
	run, err := runDocumentsPlan(context.Background(), o, plan{via: "documents", mode: "field", instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := run.Documents
	t.Logf("%d changes (%d moves), %d deliveries, error %d (%d counters off), %d exact", d.Changes, d.Moves, d.Deliveries, d.Error, d.Off, d.Exact)
	if d.Changes < 50 || d.Moves < d.Changes/5 || d.Deliveries < d.Changes {
		t.Fatalf("%d changes, %d moves, %d events delivered: the load, its moves or the events did not run", d.Changes, d.Moves, d.Deliveries)
	}
	if !run.ExactCheckPass || d.Exact != o.parents {
		t.Errorf("field-keyed counters with moves: %s; %d of %d exact: want every one exact", run.ExactCheck, d.Exact, o.parents)
	}
}

// TestDocumentKinds: the writes- and reads-per-change splits name our documents by collection, the
// app's likes (nested or flat) as one kind, and a query by its collection.
func TestDocumentKinds(t *testing.T) {
	kind := documentKind(config.Default().Schema())
	for doc, want := range map[string]string{
		"counters/likes-bench0":                         "counters",
		"counters/likes-bench0/shards/3":                "shards",
		"counters/likes-bench0/counter_change_ledger/k": "counter_change_ledger",
		"rollups/likes-bench0":                          "roll-ups",
		"posts/bench-0":                                 "app: posts (parents)",
		"posts/bench-0/likes/u1":                        "app: likes",
		"likes/l7":                                      "app: likes",
		"counters/likes-bench0/shards":                  "queries of shards",
		"likes":                                         "queries of likes",
	} {
		if got := kind(doc); got != want {
			t.Errorf("kind of %s = %q, want %q", doc, got, want)
		}
	}
}
