package counter_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

var schema = shared.DefaultConfig().Schema

// TestGroupCommitSharesWritesAndLosesNothing: 400 concurrent increments of one counter, in waves,
// through one instance with group commit; every acknowledged increment is in the exact value, and the
// commits the client really made are at most one per interval.
func TestGroupCommitSharesWritesAndLosesNothing(t *testing.T) {
	ctx := context.Background()
	client, commits := testenv.FirestoreWithCommits(t)
	const interval = 100 * time.Millisecond
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 10, ShardCountCacheTTL: time.Minute, GroupCommitInterval: interval})
	if _, err := store.Configure(ctx, "likes", counter.Settings{NumShards: 10}); err != nil {
		t.Fatal(err)
	}
	before := len(commits())
	start := time.Now()
	var acked atomic.Int64
	var wg sync.WaitGroup
	for wave := range 4 {
		for range 100 {
			wg.Go(func() {
				if _, err := store.Increment(ctx, "likes", int64(wave+1)); err != nil {
					t.Error(err)
					return
				}
				acked.Add(int64(wave + 1))
			})
		}
		time.Sleep(30 * time.Millisecond)
	}
	wg.Wait()
	elapsed := time.Since(start)
	sum, err := store.Sum(ctx, "likes")
	if err != nil {
		t.Fatal(err)
	}
	if sum != acked.Load() || sum != 1000 {
		t.Errorf("sum %d, acknowledged %d, want 1000", sum, acked.Load())
	}
	made := commits()[before:]
	if budget := int(elapsed/interval) + 1; len(made) > budget {
		t.Errorf("%d commits for 400 increments in %s, over one per %s (%d)", len(made), elapsed, interval, budget)
	}
	for _, c := range made {
		// One shard write, and at most once a minute the counter document's touched_minute stamp.
		stamp := len(c.Docs) == 2 && c.Docs[1] == "counters/likes"
		if (len(c.Docs) != 1 && !stamp) || !strings.HasPrefix(c.Docs[0], "counters/likes/shards/") {
			t.Errorf("commit %v, want one shard write", c.Docs)
		}
	}
	t.Logf("400 increments in %d commits over %s", len(made), elapsed.Round(time.Millisecond))
}

// TestGroupCommitFailureFailsExactlyItsRequests: the writes of a broken counter fail all of their own
// increments and none of a healthy counter's.
func TestGroupCommitFailureFailsExactlyItsRequests(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 10, ShardCountCacheTTL: time.Minute, GroupCommitInterval: 50 * time.Millisecond})
	if _, err := schema.CounterRef(client, "broken").Set(ctx, map[string]any{shared.FieldNumShards: "many"}); err != nil {
		t.Fatal(err)
	}
	var brokenOK, healthyFailed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := store.Increment(ctx, "broken", 1); err == nil {
				brokenOK.Add(1)
			}
		})
		wg.Go(func() {
			if _, err := store.Increment(ctx, "healthy", 1); err != nil {
				healthyFailed.Add(1)
			}
		})
	}
	wg.Wait()
	if brokenOK.Load() != 0 || healthyFailed.Load() != 0 {
		t.Errorf("%d increments of the broken counter succeeded and %d of the healthy one failed; want 0 and 0", brokenOK.Load(), healthyFailed.Load())
	}
	if sum, err := store.Sum(ctx, "healthy"); err != nil || sum != 50 {
		t.Errorf("healthy sum %d (%v), want 50", sum, err)
	}
}
