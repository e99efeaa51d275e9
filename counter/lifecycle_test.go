package counter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// like adds delta to counter id for caller under a limit of 1 and fails t unless counted is as given.
func like(t *testing.T, s *counter.Store, id, caller string, delta int64, counted bool) {
	t.Helper()
	out, err := s.Increments.Increment(context.Background(), counter.Request{Counter: id, Delta: delta, Caller: caller, Limit: 1})
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

// purgeAll calls PurgeMembers on counter id until it says nothing is left, and returns the calls.
func purgeAll(t *testing.T, s *counter.Store, id string) (calls int) {
	t.Helper()
	for more := true; more; calls++ {
		if calls > 100 {
			t.Fatal("PurgeMembers still says more after 100 calls")
		}
		var err error
		if _, more, err = s.Members.PurgeMembers(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	return calls
}

// TestResetStartsPerCallerTotalsAfresh: like → Reset → unlike leaves 0 (the unlike has nothing to take
// back), a like after the reset counts, and the purge removes the old total only.
func TestResetStartsPerCallerTotalsAfresh(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	like(t, s, "post", "alice", 1, true)
	like(t, s, "post", "bob", 1, true)
	if discarded, err := s.Lifecycle.Reset(ctx, "post"); err != nil || discarded != 2 {
		t.Fatalf("reset = %d, %v; want 2 discarded", discarded, err)
	}
	like(t, s, "post", "alice", -1, false)
	if got := sum(t, s, "post"); got != 0 {
		t.Fatalf("post = %d after like, reset, unlike; want 0", got)
	}
	like(t, s, "post", "alice", 1, true)
	if got := sum(t, s, "post"); got != 1 {
		t.Errorf("post = %d after a like following the reset, want 1", got)
	}
	purgeAll(t, s, "post")
	if docs := callerDocs(t, client, "post"); len(docs) != 1 {
		t.Errorf("%d per-caller totals after the purge, want 1 (alice's, of the new epoch)", len(docs))
	}
	like(t, s, "post", "alice", 1, false)
	like(t, s, "post", "bob", 1, true)
}

// TestDeleteRemovesPerCallerTotals: a like on the new counter of the same ID counts, also before
// the purge, which then leaves no total of the deleted counter and keeps the new one's.
func TestDeleteRemovesPerCallerTotals(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	like(t, s, "post", "alice", 1, true)
	like(t, s, "post", "bob", 1, true)
	if err := s.Lifecycle.Delete(ctx, "post"); err != nil {
		t.Fatal(err)
	}
	like(t, s, "post", "alice", 1, true)
	if got := sum(t, s, "post"); got != 1 {
		t.Errorf("post = %d after a like on the new counter, want 1", got)
	}
	purgeAll(t, s, "post")
	if docs := callerDocs(t, client, "post"); len(docs) != 1 {
		t.Errorf("%d per-caller totals after the purge, want 1 (alice's on the new counter)", len(docs))
	}
	like(t, s, "post", "alice", 1, false)
}

// TestResetAndDeleteWithMoreThan10000PerCallerTotals: a counter holding 10,001 per-user totals (a
// single transaction once refused it with 409 forever) is reset and deleted; the old totals no
// longer count at once and are purged in bounded calls.
func TestResetAndDeleteWithMoreThan10000PerCallerTotals(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	const totals = 10_001
	seed := func(prefix string) { // alice's total and 10,000 more
		t.Helper()
		batch := client.BulkWriter(ctx)
		callers := schema.CounterRef(client, "post").Collection(shared.CallersCollection)
		for i := range totals - 1 {
			if _, err := batch.Set(callers.Doc(fmt.Sprintf("%s-%05d", prefix, i)),
				map[string]any{shared.FieldNet: int64(1), shared.FieldUpdatedAt: firestore.ServerTimestamp}); err != nil {
				t.Fatal(err)
			}
		}
		batch.End()
		if n := len(callerDocs(t, client, "post")); n != totals {
			t.Fatalf("%d per-caller totals seeded, want %d", n, totals)
		}
	}
	like(t, s, "post", "alice", 1, true)
	seed("before-reset")
	if discarded, err := s.Lifecycle.Reset(ctx, "post"); err != nil || discarded != 1 {
		t.Fatalf("reset of a counter with %d per-user totals = %d, %v; want 1 discarded", totals, discarded, err)
	}
	like(t, s, "post", "alice", 1, true)
	if calls := purgeAll(t, s, "post"); calls < totals/counter.MaxMembersPerPurge {
		t.Errorf("purged %d totals in %d calls, want bounded calls of at most %d", totals, calls, counter.MaxMembersPerPurge)
	}
	if n := len(callerDocs(t, client, "post")); n != 1 {
		t.Fatalf("%d per-caller totals after the reset's purge, want 1 (alice's of the new epoch)", n)
	}
	like(t, s, "post", "alice", 1, false)
	if got := sum(t, s, "post"); got != 1 {
		t.Fatalf("post = %d after the reset and one like, want 1", got)
	}
	seed("before-delete")
	if err := s.Lifecycle.Delete(ctx, "post"); err != nil {
		t.Fatalf("delete of a counter with %d per-user totals: %v", totals, err)
	}
	purgeAll(t, s, "post")
	if n := len(callerDocs(t, client, "post")); n != 0 {
		t.Errorf("%d per-caller totals outlived their counter", n)
	}
}

// TestResetStampsTheCounterForTheSweep: a reset changes the value, so it raises touched_minute like
// any shard write: the scheduled sweep finds the counter and rolls up its new value.
func TestResetStampsTheCounterForTheSweep(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	if _, err := s.Increments.Increment(ctx, counter.Request{Counter: "views", Delta: 5}); err != nil {
		t.Fatal(err)
	}
	ref := schema.CounterRef(client, "views")
	if _, err := ref.Update(ctx, []firestore.Update{{Path: shared.FieldTouchedMinute, Value: 1}}); err != nil {
		t.Fatal(err)
	}
	start := shared.UnixMinute(time.Now())
	if _, err := s.Lifecycle.Reset(ctx, "views"); err != nil {
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
	if _, err := a.Lifecycle.Configure(ctx, "post", counter.Settings{NumShards: 3}); err != nil {
		t.Fatal(err)
	}
	b := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 10, ShardCountCacheTTL: time.Minute})
	if err := b.Lifecycle.Delete(ctx, "post"); err != nil {
		t.Fatal(err)
	}
	key := counter.Key{Source: counter.SourcePubSub, ID: "m-1"}
	out, err := a.Increments.Increment(ctx, counter.Request{Key: &key, Counter: "post", Delta: 4})
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
	if _, err := s.Lifecycle.Configure(ctx, "views", counter.Settings{NumShards: 2, MinShards: 2, MaxShards: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Increments.Increment(ctx, counter.Request{Counter: "views", Delta: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.ShardRef(client, "views", 5).Set(ctx, map[string]any{shared.FieldCount: 3, shared.FieldWrites: 1}); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.Lifecycle.Adapt(ctx, "views", 3, 3); err != nil || changed {
		t.Fatalf("Adapt(3, 3) of a counter of 2 shards = %v, %v; want nothing done", changed, err)
	}
	if changed, err := s.Lifecycle.Adapt(ctx, "views", 2, 2); err != nil || !changed {
		t.Fatalf("Adapt(2, 2) = %v, %v; want the stray shard folded", changed, err)
	}
	if _, err := schema.ShardRef(client, "views", 5).Get(ctx); err == nil {
		t.Error("stray shard 5 still exists")
	}
	if got := sum(t, s, "views"); got != 7 {
		t.Errorf("views = %d after the fold, want 7", got)
	}
	if changed, err := s.Lifecycle.Adapt(ctx, "views", 2, 2); err != nil || changed {
		t.Errorf("second Adapt(2, 2) = %v, %v; want nothing left to fold", changed, err)
	}
}
