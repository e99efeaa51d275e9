package counter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// dropNextResponse makes proxy lose the answer to the next request chunk that contains match (the
// request reaches the emulator and applies), then forward everything again.
func dropNextResponse(t *testing.T, proxy *faultproxy.Proxy, match string) {
	t.Helper()
	before := proxy.Counts().DroppedResponses
	proxy.SetFaults(faultproxy.Faults{DropResponseRate: 1, Match: []byte(match)})
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for proxy.Counts().DroppedResponses == before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		proxy.SetFaults(faultproxy.Faults{})
	}()
}

// TestALostCommitResponseDoublesARawShardIncrementButNotAStoreIncrement shows the breach and the fix
// through a real network fault: the proxy loses the answer to a commit that the emulator applied.
// The Firestore client library sends the commit again (it retries Commit on Unavailable). A raw
// shard increment, as the Firebase guide writes it, is then applied twice although its caller was
// told it succeeded once; the Store's increment, whose commit creates a write record, is applied
// once and answered as applied.
func TestALostCommitResponseDoublesARawShardIncrementButNotAStoreIncrement(t *testing.T) {
	ctx := context.Background()
	db := testenv.FirestoreBehindFaultProxy(t)
	proxy, client, direct := db.Proxy, db.Client, db.Direct
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 1, ShardCountCacheTTL: time.Minute, DedupeTTL: time.Hour})
	exact := counter.NewStore(direct, schema, counter.Options{DefaultNumShards: 1})
	for _, id := range []string{"raw", "store"} {
		if _, err := store.Lifecycle.Configure(ctx, id, counter.Settings{NumShards: 1}); err != nil {
			t.Fatal(err)
		}
	}

	// The proxy cuts the connection only once the emulator has answered the commit, so every raw
	// increment is applied, then applied again by the client library's retry.
	const times = 5
	for range times {
		dropNextResponse(t, proxy, "/shards/")
		_, err := schema.ShardRef(client, "raw", 0).Set(ctx, map[string]any{shared.FieldCount: firestore.Increment(1)}, firestore.MergeAll)
		if err != nil {
			t.Fatalf("raw increment: %v (the client library should have retried it)", err)
		}
	}
	if got, err := exact.Reader.Sum(ctx, "raw"); err != nil || got < 2*times {
		t.Fatalf("raw = %d (%v) after %d acknowledged increments whose responses were lost; want the breach shown: each applied twice (%d)", got, err, times, 2*times)
	}

	for range times {
		dropNextResponse(t, proxy, "/shards/")
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "store", Delta: 1}); err != nil {
			t.Fatalf("store increment: %v, want applied", err)
		}
	}
	// A keyed increment's commit has no write record: its dedupe record, carrying the write ID, tells.
	for i := range times {
		dropNextResponse(t, proxy, "/shards/")
		out, err := store.Increments.Increment(ctx, counter.Request{Key: &counter.Key{Source: counter.SourceHTTP, ID: fmt.Sprint(i)}, Counter: "store", Delta: 1})
		if err != nil || out.Duplicate {
			t.Fatalf("keyed store increment: %+v, %v; want applied, not a duplicate", out, err)
		}
	}
	if got, err := exact.Reader.Sum(ctx, "store"); err != nil || got != 2*times {
		t.Errorf("store = %d (%v) after %d acknowledged increments whose responses were lost, want exactly that", got, err, 2*times)
	}
	if n := proxy.Counts().DroppedResponses; n < 3*times {
		t.Errorf("the proxy dropped %d responses, want one per case", n)
	}
}
