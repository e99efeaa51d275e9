package counter

import (
	"context"
	"testing"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// TestPurgeKeepsATotalRewrittenAfterItsRead: a purge reads a per-caller total of the old epoch, then
// the caller's increment rewrites it in the new epoch before the purge's delete. The delete must not
// remove it: the caller could count again.
func TestPurgeKeepsATotalRewrittenAfterItsRead(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	s := NewStore(client, shared.Schema{Counters: "counters", Rollups: "rollups", Dedupe: "counter_dedupe", Tops: "tops"}, Options{DefaultNumShards: 1}).Members
	ref := s.schema.CallerRef(client, "post", callerDocID("alice"))
	if _, err := ref.Set(ctx, callerTotalFields(1)); err != nil {
		t.Fatal(err)
	}
	read, err := ref.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	since := read.UpdateTime.Add(1) // the read total is of an earlier epoch
	if _, err := ref.Set(ctx, callerTotalFields(1)); err != nil {
		t.Fatal(err)
	}
	p := purgeable{shared.CallersCollection, shared.FieldUpdatedAt, true}
	if deleted, err := s.deleteStale(ctx, []*firestore.DocumentSnapshot{read}, p, since); err != nil || deleted != 0 {
		t.Fatalf("deleteStale = %d, %v; want 0 deleted", deleted, err)
	}
	if _, err := ref.Get(ctx); err != nil {
		t.Fatalf("the rewritten total is gone: %v", err)
	}
}
