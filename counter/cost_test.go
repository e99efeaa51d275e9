package counter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/testenv"
)

// TestDocumentsWrittenPerIncrement measures, from the commits the client really made, the documents
// each increment writes: a windowed counter's increment writes exactly what a plain one's does (its
// buckets ride on the shard write), a distinct member's first increment writes the shard and its
// member documents (all time + one per window), and a repeat writes nothing.
func TestDocumentsWrittenPerIncrement(t *testing.T) {
	ctx := context.Background()
	client, commits := testenv.FirestoreWithCommits(t)
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 8, ShardCountCacheTTL: time.Minute})
	yes := true
	for id, st := range map[string]counter.Settings{
		"plain":    {NumShards: 8},
		"windowed": {NumShards: 8, Windows: counter.Windows},
		"distinct": {NumShards: 8, Windows: []string{"day", "month"}, Distinct: &yes},
	} {
		if _, err := store.Lifecycle.Configure(ctx, id, st); err != nil {
			t.Fatal(err)
		}
	}
	// written counts the documents of counter id's commits since from, the counter document (its
	// once-a-minute touched stamp) left out.
	written := func(from int, id string) (docs, made int) {
		for _, c := range commits()[from:] {
			made++
			for _, d := range c.Docs {
				if d != "counters/"+id {
					docs++
				}
			}
		}
		return docs, made
	}
	const n = 20
	for _, id := range []string{"plain", "windowed"} {
		from := len(commits())
		for range n {
			if _, err := store.Increments.Increment(ctx, counter.Request{Counter: id, Delta: 1}); err != nil {
				t.Fatal(err)
			}
		}
		docs, made := written(from, id)
		t.Logf("%s: %d commits, %.1f documents written per increment", id, made, float64(docs)/n)
		if docs != 2*n { // the shard and the commit's write record
			t.Errorf("%s: %d documents for %d increments, want 2 each (shard, write record)", id, docs, n)
		}
	}
	from := len(commits())
	for i := range n {
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "distinct", Member: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	docs, made := written(from, "distinct")
	t.Logf("distinct, new members: %d commits, %.1f documents written per increment", made, float64(docs)/n)
	if docs != 5*n { // the shard, its member fence, the member, its day and its month documents
		t.Errorf("distinct: %d documents for %d new members, want 5 each", docs, n)
	}
	from = len(commits())
	for i := range n {
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "distinct", Member: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if docs, made := written(from, "distinct"); docs != 0 {
		t.Errorf("distinct, repeats: %d documents in %d commits, want none", docs, made)
	}
}
