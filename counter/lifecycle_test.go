package counter_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// like adds delta to counter id for caller under a limit of 1 and fails t unless counted is as given.
func like(t *testing.T, s *counter.Store, id, caller string, delta int64, counted bool) {
	t.Helper()
	out, err := s.Apply(context.Background(), counter.Request{Counter: id, Delta: delta, Caller: caller, Limit: 1})
	if err != nil {
		t.Fatalf("%s %+d on %s: %v", caller, delta, id, err)
	}
	if out.Counted != counted {
		t.Fatalf("%s %+d on %s: counted %v, want %v", caller, delta, id, out.Counted, counted)
	}
}

// callerDocs lists counter id's per-caller totals.
func callerDocs(t *testing.T, client *firestore.Client, id string) []*firestore.DocumentSnapshot {
	t.Helper()
	docs, err := schema.CounterRef(client, id).Collection(shared.CallersCollection).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestResetStartsPerCallerTotalsAfresh: like → Reset → unlike leaves 0 (the unlike has nothing to take
// back), and a like after the reset counts.
func TestResetStartsPerCallerTotalsAfresh(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	like(t, s, "post", "alice", 1, true)
	if discarded, err := s.Reset(ctx, "post"); err != nil || discarded != 1 {
		t.Fatalf("reset = %d, %v; want 1 discarded", discarded, err)
	}
	if docs := callerDocs(t, client, "post"); len(docs) != 0 {
		t.Errorf("%d per-caller totals left after the reset, want none", len(docs))
	}
	like(t, s, "post", "alice", -1, false)
	if got := sum(t, s, "post"); got != 0 {
		t.Fatalf("post = %d after like, reset, unlike; want 0", got)
	}
	like(t, s, "post", "alice", 1, true)
	if got := sum(t, s, "post"); got != 1 {
		t.Errorf("post = %d after a like following the reset, want 1", got)
	}
}

// TestDeleteRemovesPerCallerTotals: no per-caller total outlives its counter, and a like on the new
// counter of the same ID counts.
func TestDeleteRemovesPerCallerTotals(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	like(t, s, "post", "alice", 1, true)
	like(t, s, "post", "bob", 1, true)
	if err := s.Delete(ctx, "post"); err != nil {
		t.Fatal(err)
	}
	if docs := callerDocs(t, client, "post"); len(docs) != 0 {
		t.Errorf("%d per-caller totals outlived their counter", len(docs))
	}
	like(t, s, "post", "alice", 1, true)
	if got := sum(t, s, "post"); got != 1 {
		t.Errorf("post = %d after a like on the new counter, want 1", got)
	}
}

// TestResetStampsTheCounterForTheSweep: a reset changes the value, so it raises touched_minute like
// any shard write: the scheduled sweep finds the counter and rolls up its new value.
func TestResetStampsTheCounterForTheSweep(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	if _, err := s.Apply(ctx, counter.Request{Counter: "views", Delta: 5}); err != nil {
		t.Fatal(err)
	}
	ref := schema.CounterRef(client, "views")
	if _, err := ref.Update(ctx, []firestore.Update{{Path: shared.FieldTouchedMinute, Value: 1}}); err != nil {
		t.Fatal(err)
	}
	start := shared.UnixMinute(time.Now())
	if _, err := s.Reset(ctx, "views"); err != nil {
		t.Fatal(err)
	}
	doc, err := ref.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := doc.DataAt(shared.FieldTouchedMinute); m == nil || m.(int64) < start {
		t.Errorf("touched_minute = %v after the reset, want at least %d", m, start)
	}
}

// TestKeyedIncrementAfterADeleteIsAnsweredDefinitively: an instance whose cached shard count outlived
// a delete sends a keyed commit whose touched stamp finds no counter (NotFound). That is "not applied",
// not "unknown": the commit is planned again, creates the counter, and the key applies once.
func TestKeyedIncrementAfterADeleteIsAnsweredDefinitively(t *testing.T) {
	a, client := newStore(t)
	ctx := context.Background()
	// Configuring through a caches the shard count but stamps nothing: a's next write stamps.
	if _, err := a.Configure(ctx, "post", counter.Settings{NumShards: 3}); err != nil {
		t.Fatal(err)
	}
	b := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 10, ShardCountCacheTTL: time.Minute})
	if err := b.Delete(ctx, "post"); err != nil {
		t.Fatal(err)
	}
	key := counter.Key{Source: counter.SourcePubSub, ID: "m-1"}
	out, err := a.Apply(ctx, counter.Request{Key: &key, Counter: "post", Delta: 4})
	if err != nil || out.Duplicate {
		t.Fatalf("keyed increment after the delete = %+v, %v; want applied", out, err)
	}
	if got := sum(t, a, "post"); got != 4 {
		t.Errorf("post = %d, want 4", got)
	}
	if _, err := schema.CounterRef(client, "post").Get(ctx); err != nil {
		t.Errorf("counter document after the keyed increment: %v; want it created again", err)
	}
}

// TestAdaptToTheSameCountFoldsStrayShards: a counter at min_shards never shrinks, so a shard recreated
// past num_shards by an instance with a stale count is folded by Adapt(n, n), value unchanged.
func TestAdaptToTheSameCountFoldsStrayShards(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	if _, err := s.Configure(ctx, "views", counter.Settings{NumShards: 2, MinShards: 2, MaxShards: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, counter.Request{Counter: "views", Delta: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.ShardRef(client, "views", 5).Set(ctx, map[string]any{shared.FieldCount: 3, shared.FieldWrites: 1}); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.Adapt(ctx, "views", 3, 3); err != nil || changed {
		t.Fatalf("Adapt(3, 3) of a counter of 2 shards = %v, %v; want nothing done", changed, err)
	}
	if changed, err := s.Adapt(ctx, "views", 2, 2); err != nil || !changed {
		t.Fatalf("Adapt(2, 2) = %v, %v; want the stray shard folded", changed, err)
	}
	if _, err := schema.ShardRef(client, "views", 5).Get(ctx); err == nil {
		t.Error("stray shard 5 still exists")
	}
	if got := sum(t, s, "views"); got != 7 {
		t.Errorf("views = %d after the fold, want 7", got)
	}
	if changed, err := s.Adapt(ctx, "views", 2, 2); err != nil || changed {
		t.Errorf("second Adapt(2, 2) = %v, %v; want nothing left to fold", changed, err)
	}
}
