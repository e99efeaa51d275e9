package counter_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// TestIncrementKeyedScopesKeysByCaller: the same Idempotency-Key from two verified callers is two keys, so
// one caller can neither consume another's key (bob's first use applies) nor replay it; a key without
// a caller is a third, public key.
func TestIncrementKeyedScopesKeysByCaller(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	incs := []wire.Increment{{Counter: "a", Delta: 1}}
	for _, caller := range []string{"alice", "bob", ""} {
		out, err := s.Increments.Increment(ctx, counter.Request{Key: &counter.Key{Source: counter.SourceHTTP, Caller: caller, ID: "k"}, Batch: incs})
		if err != nil || out.Duplicate {
			t.Fatalf("caller %q, key k = %+v, %v; want applied (keys are the caller's own)", caller, out, err)
		}
	}
	out, err := s.Increments.Increment(ctx, counter.Request{Key: &counter.Key{Source: counter.SourceHTTP, Caller: "alice", ID: "k"}, Batch: incs})
	if err != nil || !out.Duplicate {
		t.Fatalf("alice's retry of k = %+v, %v; want a duplicate", out, err)
	}
	// bob's own first use of a key alice spent on other increments is his, not a reuse of hers.
	if _, err := s.Increments.Increment(ctx, counter.Request{Key: &counter.Key{Source: counter.SourceHTTP, Caller: "bob", ID: "k2"}, Batch: incs}); err != nil {
		t.Fatal(err)
	}
	other := []wire.Increment{{Counter: "a", Delta: 5}}
	if out, err := s.Increments.Increment(ctx, counter.Request{Key: &counter.Key{Source: counter.SourceHTTP, Caller: "alice", ID: "k2"}, Batch: other}); err != nil || out.Duplicate {
		t.Fatalf("alice's first use of k2 = %+v, %v; want applied, not bob's answer", out, err)
	}
	if got := sum(t, s, "a"); got != 9 {
		t.Errorf("a = %d, want 9 (three callers' k, bob's k2, alice's k2 of 5)", got)
	}
}

// TestIncrementLimitedOneLikePerUser: with limit 1 a user's second like is not counted, an unlike
// takes the like back, an unlike below zero is not counted, and users do not limit each other.
func TestIncrementLimitedOneLikePerUser(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	steps := []struct {
		caller  string
		delta   int64
		counted bool
	}{
		{"alice", 1, true}, {"alice", 1, false}, {"bob", 1, true}, {"alice", -1, true},
		{"alice", -1, false}, {"alice", 1, true}, {"bob", 2, false},
	}
	for i, st := range steps {
		out, err := s.Increments.Increment(ctx, counter.Request{Counter: "post", Delta: st.delta, Caller: st.caller, Limit: 1})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if out.Counted != st.counted || (out.Applied[0].Shard < 0) == st.counted {
			t.Errorf("step %d (%s %+d) = %+v, want counted %v", i, st.caller, st.delta, out, st.counted)
		}
	}
	if got := sum(t, s, "post"); got != 2 {
		t.Errorf("post = %d, want 2 (one like each from alice and bob)", got)
	}
}

// TestIncrementLimitedConcurrentLikesOfOneUserCountOnce: a user who double-clicks (concurrent +1s)
// still adds one: the transaction reads the user's total before it writes.
func TestIncrementLimitedConcurrentLikesOfOneUserCountOnce(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	const n = 4
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		counted int
	)
	for range n {
		wg.Go(func() {
			out, err := s.Increments.Increment(ctx, counter.Request{Counter: "clicks", Delta: 1, Caller: "carol", Limit: 1})
			if err != nil {
				t.Error(err)
				return
			}
			if out.Counted {
				mu.Lock()
				counted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got := sum(t, s, "clicks"); got != 1 || counted != 1 {
		t.Errorf("clicks = %d with %d answers 'counted', want 1 and 1", got, counted)
	}
}

// TestIncrementLimitedKeyedRetryAnswersAsTheFirstTime: a keyed like that was not counted stays not
// counted on retry, even after an unlike made room; a keyed like that counted is not counted again.
func TestIncrementLimitedKeyedRetryAnswersAsTheFirstTime(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	like := wire.Increment{Counter: "photo", Delta: 1}
	k1 := &counter.Key{Source: counter.SourceHTTP, Caller: "dave", ID: "like-1"}
	k2 := &counter.Key{Source: counter.SourceHTTP, Caller: "dave", ID: "like-2"}
	if out, err := s.Increments.Increment(ctx, counter.Request{Counter: like.Counter, Delta: like.Delta, Caller: "dave", Limit: 1, Key: k1}); err != nil || !out.Counted || out.Duplicate {
		t.Fatalf("first like = %+v, %v; want counted", out, err)
	}
	if out, err := s.Increments.Increment(ctx, counter.Request{Counter: like.Counter, Delta: like.Delta, Caller: "dave", Limit: 1, Key: k1}); err != nil || !out.Counted || !out.Duplicate {
		t.Fatalf("retry of the first like = %+v, %v; want the first answer (counted) as a duplicate", out, err)
	}
	if out, err := s.Increments.Increment(ctx, counter.Request{Counter: like.Counter, Delta: like.Delta, Caller: "dave", Limit: 1, Key: k2}); err != nil || out.Counted {
		t.Fatalf("second like = %+v, %v; want not counted", out, err)
	}
	if out, err := s.Increments.Increment(ctx, counter.Request{Counter: "photo", Delta: -1, Caller: "dave", Limit: 1}); err != nil || !out.Counted {
		t.Fatalf("unlike = %+v, %v; want counted", out, err)
	}
	if out, err := s.Increments.Increment(ctx, counter.Request{Counter: like.Counter, Delta: like.Delta, Caller: "dave", Limit: 1, Key: k2}); err != nil || out.Counted || !out.Duplicate {
		t.Fatalf("retry of the second like after the unlike = %+v, %v; want its first answer, not counted", out, err)
	}
	if got := sum(t, s, "photo"); got != 0 {
		t.Errorf("photo = %d, want 0 (liked, unliked)", got)
	}
}

// TestLimitedIncrementsStampTheCounterForTheSweep: a counter changed only by limited increments is
// stamped touched_minute like any other, whether the increment creates it or finds it configured
// without a stamp, so the scheduled sweep (which queries that field) still finds it.
func TestLimitedIncrementsStampTheCounterForTheSweep(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	start := time.Now()
	if _, err := s.Lifecycle.Configure(ctx, "configured", counter.Settings{NumShards: 3}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"created", "configured"} {
		if out, err := s.Increments.Increment(ctx, counter.Request{Counter: id, Delta: 1, Caller: "alice", Limit: 1}); err != nil || !out.Counted {
			t.Fatalf("%s: %+v, %v; want counted", id, out, err)
		}
		doc, err := schema.CounterRef(client, id).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A stamp trails its write's minute by at most one (each instance's minutes have an offset).
		if m, _ := doc.DataAt(shared.FieldTouchedMinute); m == nil || m.(int64) < shared.UnixMinute(start)-1 {
			t.Errorf("%s: touched_minute = %v after a limited increment, want at least %d", id, m, shared.UnixMinute(start)-1)
		}
	}
}

// TestLimitedDuplicateLeavesTheStampDue: a replayed keyed like writes nothing, so it must not count as
// this instance's touched_minute stamp: the instance's next write of the counter still stamps it.
// Store b plays a second instance that meets the replay first.
func TestLimitedDuplicateLeavesTheStampDue(t *testing.T) {
	a, client := newStore(t)
	ctx := context.Background()
	key := &counter.Key{Source: counter.SourceHTTP, Caller: "dave", ID: "like-1"}
	like := wire.Increment{Counter: "post", Delta: 1}
	if out, err := a.Increments.Increment(ctx, counter.Request{Counter: like.Counter, Delta: like.Delta, Caller: "dave", Limit: 1, Key: key}); err != nil || !out.Counted {
		t.Fatalf("first like = %+v, %v; want counted", out, err)
	}
	ref := schema.CounterRef(client, "post")
	// Clear a's stamp, so that only b's own stamp can set the field below.
	if _, err := ref.Update(ctx, []firestore.Update{{Path: shared.FieldTouchedMinute, Value: firestore.Delete}}); err != nil {
		t.Fatal(err)
	}
	b := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 10, ShardCountCacheTTL: time.Minute})
	if out, err := b.Increments.Increment(ctx, counter.Request{Counter: like.Counter, Delta: like.Delta, Caller: "dave", Limit: 1, Key: key}); err != nil || !out.Duplicate {
		t.Fatalf("replayed like on b = %+v, %v; want a duplicate", out, err)
	}
	if out, err := b.Increments.Increment(ctx, counter.Request{Counter: like.Counter, Delta: like.Delta, Caller: "erin", Limit: 1}); err != nil || !out.Counted {
		t.Fatalf("erin's like on b = %+v, %v; want counted", out, err)
	}
	doc, err := ref.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := doc.DataAt(shared.FieldTouchedMinute); m == nil {
		t.Error("touched_minute missing after b's first real write: b took the replay for a stamp it never wrote")
	}
}

// TestLimitedIncrementThatNeverReachedFirestoreIsNotApplied: a request whose context ended before its
// transaction began sent nothing, so it is answered "not applied" (safe to retry), not "unknown".
func TestLimitedIncrementThatNeverReachedFirestoreIsNotApplied(t *testing.T) {
	s, _ := newStore(t)
	like := wire.Increment{Counter: "reel", Delta: 1}
	if _, err := s.Increments.Increment(context.Background(), counter.Request{Counter: like.Counter, Delta: like.Delta, Caller: "dave", Limit: 1}); err != nil {
		t.Fatal(err) // the counter's shard count and stamp are now cached: no read before the transaction
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Increments.Increment(ctx, counter.Request{Counter: like.Counter, Delta: like.Delta, Caller: "erin", Limit: 1})
	if !errors.Is(err, counter.ErrNotApplied) || errors.Is(err, counter.ErrOutcomeUnknown) {
		t.Fatalf("err = %v; want ErrNotApplied (nothing was sent)", err)
	}
}
