package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/counters/internal/testenv"
)

// ours and the app's documents: the counters' (default names, a shard under a counter document
// that no longer exists among them) and an app's, some in collections named like ours but elsewhere
// (posts/p1/shards, posts/p1/counters) or named like the counters' subcollections at the top.
var (
	ours = []string{"counters/likes", "counters/likes/shards/0", "counters/likes/counter_members/m1",
		"counters/likes/callers/u1", "counters/gone/shards/3", "counters_sweep/state", "rollups/likes",
		"tops/g_all", "counter_dedupe/k1"}
	apps = []string{"notes/n1", "posts/p1", "posts/p1/shards/0", "posts/p1/counters/c", "shards/s1",
		"counter_members/m1", "rollups_archive/r1"}
)

// TestRemovesOurDocumentsAndNoOthers: a dry run counts our documents and deletes nothing; the run
// deletes every one of ours, at any depth, and none of the app's.
func TestRemovesOurDocumentsAndNoOthers(t *testing.T) {
	ctx := context.Background()
	project := testenv.Project(t)
	client := testenv.FirestoreOf(t, project)
	for _, name := range []string{"COUNTERS_COLLECTION", "ROLLUPS_COLLECTION", "TOPS_COLLECTION", "DEDUPE_COLLECTION"} {
		t.Setenv(name, "")
	}
	for _, path := range append(slices.Clone(ours), apps...) {
		if _, err := client.Doc(path).Create(ctx, map[string]any{"x": 1}); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	if err := run(ctx, []string{"-project", project, "-dry-run"}, &out); err != nil {
		t.Fatalf("removedata -dry-run: %v", err)
	}
	if !strings.Contains(out.String(), "counters: would delete 5 documents") || !strings.Contains(out.String(), "rollups: would delete 1 documents") {
		t.Errorf("dry run said:\n%s", out.String())
	}
	if got := len(testenv.DocumentPaths(t, client)); got != len(ours)+len(apps) {
		t.Errorf("the dry run left %d documents, want all %d", got, len(ours)+len(apps))
	}
	out.Reset()
	if err := run(ctx, []string{"-project", project}, &out); err != nil {
		t.Fatalf("removedata: %v", err)
	}
	left := testenv.DocumentPaths(t, client)
	slices.Sort(left)
	want := slices.Sorted(slices.Values(apps))
	if !slices.Equal(left, want) {
		t.Errorf("left %v, want the app's documents only: %v\n%s", left, want, out.String())
	}
}
