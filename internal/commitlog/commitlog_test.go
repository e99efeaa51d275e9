package commitlog_test

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/internal/testenv"
)

// docs is every document the lines of log name, sorted.
func docs(t *testing.T, log *testenv.LogBuffer) []string {
	t.Helper()
	var docs []string
	for _, line := range log.Lines(t) {
		for _, d := range line["docs"].([]any) {
			docs = append(docs, d.(string))
		}
	}
	sort.Strings(docs)
	return docs
}

// TestReadsAreWhatFirestoreBills: a read log holds each document got or queried (a missing one
// too), a query's collection when it returns nothing, and an aggregation's collection once; the
// commit log holds only the writes.
func TestReadsAreWhatFirestoreBills(t *testing.T) {
	ctx := context.Background()
	var commits, reads testenv.LogBuffer
	client := testenv.FirestoreRecording(t, &commits, &reads)
	for _, id := range []string{"a", "b"} {
		if _, err := client.Collection("posts").Doc(id).Set(ctx, map[string]any{"n": 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.GetAll(ctx, []*firestore.DocumentRef{client.Doc("posts/a"), client.Doc("posts/missing")}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Collection("posts").Documents(ctx).GetAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Collection("posts").Doc("a").Collection("likes").Documents(ctx).GetAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CollectionGroup("likes").NewAggregationQuery().WithCount("n").Get(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"likes", "posts/a", "posts/a", "posts/a/likes", "posts/b", "posts/missing"}
	deadline := time.Now().Add(5 * time.Second) // each stream's line is written as it ends
	for !slices.Equal(docs(t, &reads), want) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := docs(t, &reads); !slices.Equal(got, want) {
		t.Errorf("reads %q, want %q", got, want)
	}
	if got := docs(t, &commits); !slices.Equal(got, []string{"posts/a", "posts/b"}) {
		t.Errorf("commits %q, want the two writes", got)
	}
}
