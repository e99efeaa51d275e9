package counter_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// newStore is a Store over a Firestore emulator project of its own.
func newStore(t *testing.T) (*counter.Store, *firestore.Client) {
	t.Helper()
	client := testenv.Firestore(t)
	return newStoreOn(client, 0), client
}

// newStoreOn is a Store on client, with group commit every interval (0: none).
func newStoreOn(client *firestore.Client, interval time.Duration) *counter.Store {
	cfg := config.Default()
	return counter.NewStore(client, cfg.Schema(), counter.Options{
		DefaultNumShards:    cfg.DefaultNumShards,
		ShardCountCacheTTL:  cfg.ShardCountCacheTTL,
		DedupeTTL:           cfg.DedupeTTL,
		GroupCommitInterval: interval,
	})
}

func sum(t *testing.T, s *counter.Store, id string) int64 {
	t.Helper()
	n, err := s.Reader.Sum(context.Background(), id)
	if err != nil {
		t.Fatalf("sum %q: %v", id, err)
	}
	return n
}

// dedupeRecords lists the dedupe records of keys (not the write records that share their collection).
func dedupeRecords(t *testing.T, client *firestore.Client) []*firestore.DocumentSnapshot {
	t.Helper()
	docs, err := client.Collection(config.Default().Schema().Dedupe).
		Where(shared.FieldDedupeSource, "!=", "write").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestIncrementKeyedAppliesAKeyOnceAndAnswersRetriesAsTheFirstTime(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	key := counter.Key{Source: counter.SourceHTTP, ID: "order-42"}
	incs := []wire.Increment{{Counter: "likes", Delta: 5}}
	first, err := s.Increments.Increment(ctx, counter.Request{Key: &key, Batch: incs})
	if err != nil || first.Duplicate || len(first.Applied) != 1 {
		t.Fatalf("first Increment = %+v, %v", first, err)
	}
	for range 3 {
		again, err := s.Increments.Increment(ctx, counter.Request{Key: &key, Batch: incs})
		if err != nil || !again.Duplicate {
			t.Fatalf("retry = %+v, %v; want a duplicate", again, err)
		}
		if fmt.Sprint(again.Applied) != fmt.Sprint(first.Applied) {
			t.Errorf("retry answered %+v, the first call %+v", again.Applied, first.Applied)
		}
	}
	if got := sum(t, s, "likes"); got != 5 {
		t.Errorf("likes = %d after one key applied four times, want 5", got)
	}
	v, err := s.Reader.Value(ctx, "likes")
	if err != nil || v.NumShards != 10 {
		t.Errorf("counter created by a keyed increment: %+v, %v; want 10 shards", v, err)
	}

	recs := dedupeRecords(t, client)
	if len(recs) != 1 {
		t.Fatalf("%d dedupe records, want 1", len(recs))
	}
	rec := recs[0].Data()
	if rec[shared.FieldDedupeKey] != "order-42" || rec[shared.FieldDedupeSource] != "http" {
		t.Errorf("record %v lacks its key and source", rec)
	}
	expires, _ := rec[shared.FieldExpiresAt].(time.Time)
	if d := time.Until(expires); d < 191*time.Hour || d > 193*time.Hour {
		t.Errorf("record expires in %s, want the default DEDUPE_TTL of 192h", d)
	}
}

func TestIncrementKeyedRefusesAKeyReusedWithOtherIncrements(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	key := counter.Key{Source: counter.SourcePubSub, ID: "k"}
	if _, err := s.Increments.Increment(ctx, counter.Request{Key: &key, Counter: "a", Delta: 1}); err != nil {
		t.Fatal(err)
	}
	out, err := s.Increments.Increment(ctx, counter.Request{Key: &key, Counter: "a", Delta: 2})
	if !errors.Is(err, counter.ErrKeyReused) || !out.Duplicate {
		t.Fatalf("reused key = %+v, %v; want ErrKeyReused", out, err)
	}
	if got := sum(t, s, "a"); got != 1 {
		t.Errorf("a = %d, want 1: the reused key must not apply", got)
	}
}

func TestIncrementKeyedScopesKeysBySource(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	incs := []wire.Increment{{Counter: "a", Delta: 1}}
	for _, src := range []counter.Source{counter.SourcePubSub, counter.SourceHTTP} {
		if out, err := s.Increments.Increment(ctx, counter.Request{Key: &counter.Key{Source: src, ID: "7"}, Batch: incs}); err != nil || out.Duplicate {
			t.Fatalf("%s key 7 = %+v, %v; want applied", src, out, err)
		}
	}
	if got := sum(t, s, "a"); got != 2 {
		t.Errorf("a = %d, want 2: equal keys from two sources are two keys", got)
	}
}

func TestIncrementKeyedMergesABatchPerCounter(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	if _, err := s.Lifecycle.Configure(ctx, "one-shard", counter.Settings{NumShards: 1}); err != nil {
		t.Fatal(err)
	}
	incs := []wire.Increment{{Counter: "one-shard", Delta: 2}, {Counter: "b", Delta: 3}, {Counter: "one-shard", Delta: -1}, {Counter: "b", Delta: 4}}
	out, err := s.Increments.Increment(ctx, counter.Request{Key: &counter.Key{Source: counter.SourcePubSub, ID: "batch"}, Batch: incs})
	if err != nil {
		t.Fatal(err)
	}
	want := []counter.AppliedIncrement{{Counter: "one-shard", Delta: 1, Shard: 0}, {Counter: "b", Delta: 7, Shard: out.Applied[1].Shard}}
	if fmt.Sprint(out.Applied) != fmt.Sprint(want) {
		t.Errorf("applied %+v, want %+v", out.Applied, want)
	}
	if a, b := sum(t, s, "one-shard"), sum(t, s, "b"); a != 1 || b != 7 {
		t.Errorf("one-shard = %d, b = %d; want 1 and 7", a, b)
	}
	shards, err := client.Collection("counters").Doc("b").Collection("shards").Documents(ctx).GetAll()
	if err != nil || len(shards) != 1 {
		t.Errorf("b has %d shard documents (%v), want 1: one write per counter", len(shards), err)
	}
}

// TestIncrementKeyedConcurrentDeliveriesOfOneKeyCountOnce: 20 concurrent calls with one key on a counter
// that does not exist yet; exactly one applies and all answer alike.
func TestIncrementKeyedConcurrentDeliveriesOfOneKeyCountOnce(t *testing.T) {
	s, client := newStore(t)
	const calls = 20
	outs := make([]counter.Result, calls)
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			outs[i], errs[i] = s.Increments.Increment(context.Background(), counter.Request{Key: &counter.Key{Source: counter.SourcePubSub, ID: "m1"}, Batch: []wire.Increment{{Counter: "new", Delta: 3}, {Counter: "other", Delta: 1}}})
		})
	}
	wg.Wait()
	applied := 0
	for i := range calls {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if !outs[i].Duplicate {
			applied++
		}
		if fmt.Sprint(outs[i].Applied) != fmt.Sprint(outs[0].Applied) {
			t.Errorf("call %d answered %+v, call 0 %+v", i, outs[i].Applied, outs[0].Applied)
		}
	}
	if applied != 1 {
		t.Errorf("%d of %d concurrent calls applied, want exactly 1", applied, calls)
	}
	if a, b := sum(t, s, "new"), sum(t, s, "other"); a != 3 || b != 1 {
		t.Errorf("new = %d, other = %d; want 3 and 1", a, b)
	}
	if n := len(dedupeRecords(t, client)); n != 1 {
		t.Errorf("%d dedupe records, want 1", n)
	}
}

// TestIncrementKeyedDistinctKeysRacingToCreateACounter: 20 concurrent keys all create the same counter;
// the losers of the creation race retry and every key applies.
func TestIncrementKeyedDistinctKeysRacingToCreateACounter(t *testing.T) {
	s, _ := newStore(t)
	const calls = 20
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			out, err := s.Increments.Increment(context.Background(), counter.Request{Key: &counter.Key{Source: counter.SourceHTTP, ID: fmt.Sprint(i)}, Counter: "raced", Delta: 1})
			if err != nil || out.Duplicate {
				t.Errorf("key %d: %+v, %v; want applied", i, out, err)
			}
		})
	}
	wg.Wait()
	if got := sum(t, s, "raced"); got != calls {
		t.Errorf("raced = %d, want %d", got, calls)
	}
}
