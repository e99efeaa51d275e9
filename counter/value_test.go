package counter_test

import (
	"context"
	"testing"

	"github.com/shardcount/counters/shared"
)

// TestTotalsCountShardsThatNeverCountedWrites: the value is the sum over every shard document, also
// over shards written without a writes field (by the guide's own clients, by hand): the roll-up's
// Totals agree with Sum.
func TestTotalsCountShardsThatNeverCountedWrites(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	if _, err := s.Increment(ctx, "likes", 3); err != nil {
		t.Fatal(err)
	}
	shards := schema.ShardsRef(client, "likes")
	if _, err := shards.Doc("guide-written").Set(ctx, map[string]any{shared.FieldCount: 2}); err != nil {
		t.Fatal(err)
	}
	totals, err := s.Totals(ctx, "likes")
	if err != nil {
		t.Fatal(err)
	}
	if want := sum(t, s, "likes"); totals.Count != want || want != 5 {
		t.Errorf("Totals = %+v, Sum = %d; want both 5", totals, want)
	}
	if totals.Shards < 2 {
		t.Errorf("Totals counts %d shard documents, want the one without writes among them", totals.Shards)
	}
}
