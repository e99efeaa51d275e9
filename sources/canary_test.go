package sources_test

import (
	"context"
	"slices"
	"testing"

	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/sources"
)

// TestProbesCountNowhere: the example app's declarations opt in to probes, and their probe
// documents (every wildcard _counters_canary) count on no counter, through their events or a
// backfill, beside a like that does.
func TestProbesCountNowhere(t *testing.T) {
	set, err := sources.Load("../web/counter-sources.json", schema)
	if err != nil {
		t.Fatal(err)
	}
	var probes []string
	for _, d := range set.Declarations {
		if !d.Canary {
			t.Errorf("the example app's declaration %s does not opt in to a probe", d.Counter)
		}
		probes = append(probes, d.ProbePath())
	}
	if want := []string{"posts/_counters_canary/likes/_counters_canary", "votes/_counters_canary", "shops/_counters_canary/orders/_counters_canary"}; !slices.Equal(probes, want) {
		t.Fatalf("probe documents %q, want %q", probes, want)
	}
	client := testenv.Firestore(t)
	counting := instanceOf(t, client, set)
	w := newWriter(t, client)
	for _, p := range probes {
		w.set(p, map[string]any{sources.ProbeID: "n1"})
	}
	like := w.set("posts/p1/likes/u1", map[string]any{"at": 1})
	var based []string
	if _, err := counting.Backfill(context.Background(), nil, "", func(id, _ string) { based = append(based, id) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(based, []string{"likes-p1"}) {
		t.Errorf("backfill based %v, want likes-p1 alone", based)
	}
	for _, write := range w.writes {
		got, err := counting.Count(context.Background(), write)
		if err != nil {
			t.Fatal(err)
		}
		if probe := write.Path != like.Path; got.Probe != probe || probe && got.Counted+got.InBase+got.Unchanged+got.Unmatched > 0 {
			t.Errorf("the write of %s: %+v, want it a probe (%v) counted nowhere", write.Path, got, probe)
		}
	}
	counters, err := client.Collection(schema.Counters).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range counters {
		ids = append(ids, c.Ref.ID)
	}
	if !slices.Equal(ids, []string{"likes-p1"}) {
		t.Errorf("counters %v, want likes-p1 alone", ids)
	}
}
