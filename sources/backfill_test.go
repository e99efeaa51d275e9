package sources_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/shardcount/counters/internal/testenv"
)

// TestBackfillBasesEveryCounterOfExistingDocuments: likes of five posts written before any counter
// (and a like collection the declaration does not match) get their counters from Backfill alone,
// exact while more likes race it and their events are counted; a second run changes nothing; a run
// resumed after a collection bases only the later ones; repair creates a missing counter.
func TestBackfillBasesEveryCounterOfExistingDocuments(t *testing.T) {
	client, newInstance := project(t)
	ctx := context.Background()
	w := newWriter(t, client)
	for p := range 5 {
		for u := range 3 + p {
			w.set(fmt.Sprintf("posts/p%d/likes/u%d", p, u), map[string]any{"at": u})
		}
	}
	w.set("comments/c1/likes/u1", map[string]any{"at": 1})
	counting := newInstance()

	before := len(w.writes)
	var racing sync.WaitGroup
	racing.Go(func() {
		for p := range 5 {
			w.set(fmt.Sprintf("posts/p%d/likes/late", p), map[string]any{"at": 9})
			w.set(fmt.Sprintf("posts/p%d/likes/u0", p), nil)
		}
	})
	var based []string
	if _, err := counting.Backfill(ctx, nil, "", func(id, _ string) { based = append(based, id) }); err != nil {
		t.Fatal(err)
	}
	racing.Wait()
	deliver(t, w.writes[before:], counting)
	slices.Sort(based)
	if want := []string{"likes-p0", "likes-p1", "likes-p2", "likes-p3", "likes-p4"}; !slices.Equal(based, want) {
		t.Errorf("backfill based %v, want %v", based, want)
	}
	checkExact(t, client, sumOf(t, client), 5, 0)

	if _, err := counting.Backfill(ctx, []string{"likes-{post}"}, "", func(string, string) {}); err != nil {
		t.Fatal(err)
	}
	checkExact(t, client, sumOf(t, client), 5, 0)

	w.set("posts/p5/likes/u1", map[string]any{"at": 1})
	w.set("posts/p6/likes/u1", map[string]any{"at": 1})
	based = nil
	if _, err := counting.Backfill(ctx, []string{"posts/{post}/likes/{like}"}, "posts/p5/likes", func(id, _ string) { based = append(based, id) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(based, []string{"likes-p6"}) {
		t.Errorf("backfill after posts/p5/likes based %v, want likes-p6 alone", based)
	}
	if err := counting.Repair(ctx, "likes-p5"); err != nil {
		t.Fatalf("repair of a missing counter: %v", err)
	}
	checkExact(t, client, sumOf(t, client), 7, 0)
	if paths := testenv.DocumentPaths(t, client); slices.Contains(paths, schema.Counters+"/likes-c1") {
		t.Error("backfill made a counter of comments/c1/likes, which no declaration counts")
	}
}
