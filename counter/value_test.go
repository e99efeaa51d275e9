package counter_test

import (
	"context"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// TestTotalsCountShardsThatNeverCountedWrites: the value is the sum over every shard document, also
// over shards written without a writes field (by the guide's own clients, by hand): the roll-up's
// Totals agree with Sum.
func TestTotalsCountShardsThatNeverCountedWrites(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	if _, err := s.Increments.Increment(ctx, counter.Request{Counter: "likes", Delta: 3}); err != nil {
		t.Fatal(err)
	}
	shards := schema.ShardsRef(client, "likes")
	written, err := shards.Doc("guide-written").Set(ctx, map[string]any{shared.FieldCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	sums, err := s.Reader.SumsAt(ctx, "likes", written.UpdateTime, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := sum(t, s, "likes"); sums.Count != want || want != 5 {
		t.Errorf("SumsAt = %+v, Sum = %d; want both 5", sums.Totals, want)
	}
	if sums.Shards < 2 {
		t.Errorf("SumsAt counts %d shard documents, want the one without writes among them", sums.Shards)
	}
}

// TestSumsAtCountTheWritesCommittedByTheirReadTime: SumsAt at the commit time of a shard write counts
// it and every write before it, and none after it: the count, the shard writes and the windows'
// buckets alike.
func TestSumsAtCountTheWritesCommittedByTheirReadTime(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	if _, err := s.Lifecycle.Configure(ctx, "views", counter.Settings{NumShards: 1, Windows: []string{counter.WindowMonth}}); err != nil {
		t.Fatal(err)
	}
	var commits []time.Time
	for range 2 {
		if _, err := s.Increments.Increment(ctx, counter.Request{Counter: "views", Delta: 5}); err != nil {
			t.Fatal(err)
		}
		snap, err := schema.ShardRef(client, "views", 0).Get(ctx) // one shard: its update time is the last write's
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, snap.UpdateTime)
	}
	// The last time is finer than Firestore's microseconds, as a clock reading is: still the writes by then.
	for i, at := range []time.Time{commits[0].Add(-time.Microsecond), commits[0], commits[1].Add(-time.Microsecond), commits[1], commits[1].Add(999 * time.Nanosecond)} {
		want := int64(5 * ((i + 1) / 2))
		sums, err := s.Reader.SumsAt(ctx, "views", at, []string{counter.WindowMonth})
		if err != nil {
			t.Fatal(err)
		}
		month := sums.Windows[counter.WindowMonth]
		if sums.Count != want || sums.Writes != want/5 || month.Bucket != counter.Bucket(counter.WindowMonth, at) || month.Count != want {
			t.Errorf("SumsAt(%s), writes committed at %v: count %d, shard writes %d, month %+v; want %d, %d and %d in bucket %s",
				at.Format(time.RFC3339Nano), commits, sums.Count, sums.Writes, month, want, want/5, want, counter.Bucket(counter.WindowMonth, at))
		}
	}
}
