package counter_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/shared"
)

// TestKeyedOutcomesCarryTheFirstApplicationsTime: every kind of keyed request (deltas, limited,
// member) answers with PlannedAt, taken after the call began and before
// the commit that applied the key (its dedupe record's create time), stored as the record's
// created_at; every later call with the key, from another Store too, answers the same PlannedAt.
func TestKeyedOutcomesCarryTheFirstApplicationsTime(t *testing.T) {
	s, client := newStore(t)
	other := newStoreOn(client, 0) // another instance: cold caches, its own plans
	ctx := context.Background()
	distinct := true
	if _, err := s.Lifecycle.Configure(ctx, "visitors", counter.Settings{Distinct: &distinct}); err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		key  counter.Key
		call func(*counter.Store, counter.Key) (time.Time, bool, error)
	}{
		{"deltas", counter.Key{Source: counter.SourceHTTP, ID: "k-apply"}, func(s *counter.Store, k counter.Key) (time.Time, bool, error) {
			out, err := s.Increments.Increment(ctx, counter.Request{Key: &k, Counter: "likes", Delta: 2})
			return out.PlannedAt, out.Duplicate, err
		}},
		{"limited", counter.Key{Source: counter.SourceHTTP, Caller: "user:ann", ID: "k-limited"}, func(s *counter.Store, k counter.Key) (time.Time, bool, error) {
			out, err := s.Increments.Increment(ctx, counter.Request{Counter: "photo", Delta: 1, Caller: "user:ann", Limit: 1, Key: &k})
			return out.PlannedAt, out.Duplicate, err
		}},
		{"member", counter.Key{Source: counter.SourceHTTP, ID: "k-member"}, func(s *counter.Store, k counter.Key) (time.Time, bool, error) {
			out, err := s.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: "ann", Key: &k})
			return out.PlannedAt, out.Duplicate, err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			began := time.Now().Truncate(time.Microsecond)
			first, dup, err := c.call(s, c.key)
			if err != nil || dup {
				t.Fatalf("first call: duplicate %v, %v", dup, err)
			}
			rec := dedupeRecordOf(t, client, c.key)
			if first.Before(began) || !first.Before(rec.CreateTime) {
				t.Errorf("PlannedAt %s not after the call began (%s) and before the key's commit (%s)", first, began, rec.CreateTime)
			}
			if stored, _ := rec.DataAt(shared.FieldCreatedAt); stored != first {
				t.Errorf("the record's created_at %v, PlannedAt %s: want them equal", stored, first)
			}
			for _, st := range []*counter.Store{s, other} {
				again, dup, err := c.call(st, c.key)
				if err != nil || !dup || !again.Equal(first) || again.Location() != time.UTC {
					t.Errorf("again: PlannedAt %s, duplicate %v, %v; want the first call's %s (UTC), a duplicate", again, dup, err, first)
				}
			}
		})
	}
}

// TestConcurrentCallsOfOneKeyAnswerOnePlannedAt: calls with one key at once, in two Stores with group
// commit (a repeat follows its key's first request in one write; a write finds another's record) all
// answer the first application's PlannedAt.
func TestConcurrentCallsOfOneKeyAnswerOnePlannedAt(t *testing.T) {
	_, client := newStore(t)
	stores := []*counter.Store{newStoreOn(client, 50*time.Millisecond), newStoreOn(client, 50*time.Millisecond)}
	for round := range 3 {
		key := counter.Key{Source: counter.SourcePubSub, ID: fmt.Sprint("burst-", round)}
		outs := make([]counter.Result, 16)
		errs := make([]error, len(outs))
		var wg sync.WaitGroup
		for i := range outs {
			wg.Go(func() {
				outs[i], errs[i] = stores[i%2].Increments.Increment(context.Background(), counter.Request{Key: &key, Counter: "burst", Delta: 1})
			})
		}
		wg.Wait()
		rec := dedupeRecordOf(t, client, key)
		stored, _ := rec.DataAt(shared.FieldCreatedAt)
		for i, out := range outs {
			if errs[i] != nil || out.PlannedAt != stored {
				t.Errorf("round %d, call %d: PlannedAt %s, %v; want the record's created_at %v", round, i, out.PlannedAt, errs[i], stored)
			}
		}
	}
}

// dedupeRecordOf reads key's dedupe record: the only one with its key ID.
func dedupeRecordOf(t *testing.T, client *firestore.Client, key counter.Key) *firestore.DocumentSnapshot {
	t.Helper()
	docs, err := client.Collection(config.Default().Schema().Dedupe).Where(shared.FieldDedupeKey, "==", key.ID).
		Documents(context.Background()).GetAll()
	if err != nil || len(docs) != 1 {
		t.Fatalf("dedupe records of key %q: %d, %v; want 1", key.ID, len(docs), err)
	}
	return docs[0]
}
