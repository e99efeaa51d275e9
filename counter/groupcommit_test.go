package counter_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

var schema = config.Default().Schema()

// TestGroupCommitSharesWritesAndLosesNothing: 400 concurrent increments of one counter, in waves,
// through one instance with group commit; every acknowledged increment is in the exact value, and the
// commits the client really made are at most one per interval, each one shard write and its write
// record (and, once a minute, the counter's touched_minute).
func TestGroupCommitSharesWritesAndLosesNothing(t *testing.T) {
	ctx := context.Background()
	client, commits := testenv.FirestoreWithCommits(t)
	const interval = 100 * time.Millisecond
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 10, ShardCountCacheTTL: time.Minute, GroupCommitInterval: interval})
	if _, err := store.Lifecycle.Configure(ctx, "likes", counter.Settings{NumShards: 10}); err != nil {
		t.Fatal(err)
	}
	before := len(commits())
	start := time.Now()
	var acked atomic.Int64
	var wg sync.WaitGroup
	for wave := range 4 {
		for range 100 {
			wg.Go(func() {
				if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "likes", Delta: int64(wave + 1)}); err != nil {
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
	sum, err := store.Reader.Sum(ctx, "likes")
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
		var shardWrites, writeRecords int
		for _, doc := range c.Docs {
			switch {
			case strings.HasPrefix(doc, "counters/likes/shards/"):
				shardWrites++
			case strings.HasPrefix(doc, schema.Dedupe+"/write-"):
				writeRecords++
			case doc != "counters/likes":
				t.Errorf("commit %v writes %s", c.Docs, doc)
			}
		}
		if shardWrites != 1 || writeRecords != 1 {
			t.Errorf("commit %v, want one shard write and one write record", c.Docs)
		}
	}
	// Every shard write counts itself, and the counter says when it was last written.
	shardDocs, err := schema.ShardsRef(client, "likes").Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	var writes int64
	for _, d := range shardDocs {
		n, _ := d.DataAt(shared.FieldWrites)
		w, _ := n.(int64)
		writes += w
	}
	if writes != int64(len(made)) {
		t.Errorf("shards count %d writes, the client made %d commits", writes, len(made))
	}
	counterDoc, err := schema.CounterRef(client, "likes").Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Each instance stamps at its own offset within the minute, so a stamp trails its write's minute
	// by at most one.
	if m, _ := counterDoc.DataAt(shared.FieldTouchedMinute); m == nil || m.(int64) < shared.UnixMinute(start)-1 {
		t.Errorf("counter touched_minute = %v, want at least %d", m, shared.UnixMinute(start)-1)
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
			if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "broken", Delta: 1}); err == nil {
				brokenOK.Add(1)
			}
		})
		wg.Go(func() {
			if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "healthy", Delta: 1}); err != nil {
				healthyFailed.Add(1)
			}
		})
	}
	wg.Wait()
	if brokenOK.Load() != 0 || healthyFailed.Load() != 0 {
		t.Errorf("%d increments of the broken counter succeeded and %d of the healthy one failed; want 0 and 0", brokenOK.Load(), healthyFailed.Load())
	}
	if sum, err := store.Reader.Sum(ctx, "healthy"); err != nil || sum != 50 {
		t.Errorf("healthy sum %d (%v), want 50", sum, err)
	}
}
