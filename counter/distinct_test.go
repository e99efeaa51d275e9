package counter_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/testenv"
)

// TestDistinctMembersCountOnceUnderDuplicatesFaultsAndInstances: 12 members each sent 10 times at
// once from two instances, a fifth of the answers lost (the emulator applied them, the client
// library or the caller sends again), count 12 all time and in each window's bucket, and each
// member's count is answered counted (or outcome unknown) once; a new day counts them again in its
// bucket only.
func TestDistinctMembersCountOnceUnderDuplicatesFaultsAndInstances(t *testing.T) {
	ctx := context.Background()
	db := testenv.FirestoreBehindFaultProxy(t)
	clock := &setClock{now: time.Date(2026, 11, 23, 18, 30, 0, 0, time.UTC)}
	opts := counter.Options{DefaultNumShards: 4, ShardCountCacheTTL: time.Minute, Clock: clock}
	exact := counter.NewStore(db.Direct, schema, opts)
	yes := true
	if _, err := exact.Lifecycle.Configure(ctx, "visitors", counter.Settings{NumShards: 4, Windows: []string{"day", "month"}, Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	stores := []*counter.Store{counter.NewStore(db.Client, schema, opts), counter.NewStore(db.Client, schema, opts)}
	db.Proxy.SetFaults(faultproxy.Faults{DropResponseRate: 0.2, Match: []byte("/shards/")})
	const members, sends = 12, 10
	var counted, unknown atomic.Int64
	var wg sync.WaitGroup
	for m := range members {
		for i := range sends {
			wg.Go(func() {
				// A caller resends until it gets an answer, as apps are told to.
				for attempt := 0; ; attempt++ {
					out, err := stores[i%2].Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: fmt.Sprint("user-", m)})
					if err == nil {
						if out.Counted {
							counted.Add(1)
						}
						return
					}
					if errors.Is(err, counter.ErrOutcomeUnknown) {
						unknown.Add(1)
					}
					if attempt == 10 || !(errors.Is(err, counter.ErrNotApplied) || errors.Is(err, counter.ErrOutcomeUnknown)) {
						t.Errorf("member %d: %v", m, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	db.Proxy.SetFaults(faultproxy.Faults{})
	if sum, err := exact.Reader.Sum(ctx, "visitors"); err != nil || sum != members {
		t.Errorf("all time %d (%v), want %d members", sum, err, members)
	}
	// Each member's counting commit answered counted, or outcome unknown: a commit whose answer
	// was lost is recognised by its write ID when it is read back.
	if c, u := counted.Load(), unknown.Load(); c > members || c+u < members {
		t.Errorf("%d answers said counted and %d outcome unknown, want at most one counted per member (%d) and every member's counted or unknown", c, u, members)
	}
	wantBuckets(t, exact, "visitors", map[string]map[string]int64{"day": {"2026-11-23": members}, "month": {"2026-11": members}})
	t.Logf("%d answers dropped; %d counted, %d unknown", db.Proxy.Counts().DroppedResponses, counted.Load(), unknown.Load())

	clock.set(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	for range 3 {
		out, err := exact.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: "user-0"})
		if err != nil {
			t.Fatal(err)
		}
		if out.Counted {
			t.Errorf("a known member counted again all time: %+v", out)
		}
	}
	wantBuckets(t, exact, "visitors", map[string]map[string]int64{"day": {"2026-11-23": members, "2026-11-24": 1}, "month": {"2026-11": members}})
	if sum, _ := exact.Reader.Sum(ctx, "visitors"); sum != members {
		t.Errorf("all time %d after a known member came back, want %d", sum, members)
	}
}

// TestDistinctCountersRefuseDeltasAndPlainCountersRefuseMembers: a plain increment of a distinct
// counter, and a member increment of a plain one, change nothing and say why.
func TestDistinctCountersRefuseDeltasAndPlainCountersRefuseMembers(t *testing.T) {
	ctx := context.Background()
	store := counter.NewStore(testenv.Firestore(t), schema, counter.Options{DefaultNumShards: 2, ShardCountCacheTTL: time.Minute})
	yes, no := true, false
	if _, err := store.Lifecycle.Configure(ctx, "d", counter.Settings{Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "d", Delta: 1}); !errors.Is(err, counter.ErrMemberRequired) || !errors.Is(err, counter.ErrNotApplied) {
		t.Errorf("plain increment of a distinct counter: %v, want ErrMemberRequired, not applied", err)
	}
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "p", Delta: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "p", Member: "ann"}); !errors.Is(err, counter.ErrNotDistinct) {
		t.Errorf("member increment of a plain counter: %v, want ErrNotDistinct", err)
	}
	// Turned distinct on a live counter: what was counted stays, members add to it.
	if _, err := store.Lifecycle.Configure(ctx, "p", counter.Settings{Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "p", Member: "ann"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Lifecycle.Configure(ctx, "p", counter.Settings{Distinct: &no}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "p", Delta: 2}); err != nil {
		t.Fatal(err)
	}
	if sum, err := store.Reader.Sum(ctx, "p"); err != nil || sum != 8 {
		t.Errorf("all time %d (%v), want 5 + 1 member + 2", sum, err)
	}
	if sum, _ := store.Reader.Sum(ctx, "d"); sum != 0 {
		t.Errorf("the refused increment counted: %d", sum)
	}
}

// TestDistinctMembersCountAgainAfterResetAndDelete: a member counted once counts again after a Reset
// (which discards its count), and after a Delete and a new counter of the same ID; a member
// increment of the deleted counter is ErrNotFound and writes no shard.
func TestDistinctMembersCountAgainAfterResetAndDelete(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 2, ShardCountCacheTTL: time.Hour})
	yes := true
	configure := func() {
		t.Helper()
		if _, err := store.Lifecycle.Configure(ctx, "v", counter.Settings{Distinct: &yes, Windows: []string{"day"}}); err != nil {
			t.Fatal(err)
		}
	}
	countAnn := func(want bool) {
		t.Helper()
		out, err := store.Increments.Increment(ctx, counter.Request{Counter: "v", Member: "ann"})
		if err != nil || out.Counted != want {
			t.Fatalf("ann: %+v, %v; want counted %v", out, err, want)
		}
	}
	configure()
	countAnn(true)
	countAnn(false)
	if _, err := store.Lifecycle.Reset(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	countAnn(true)
	if got := sum(t, store, "v"); got != 1 {
		t.Errorf("v = %d after a reset and ann again, want 1", got)
	}
	if err := store.Lifecycle.Delete(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "v", Member: "ann"}); !errors.Is(err, counter.ErrNotFound) {
		t.Errorf("member increment of a deleted counter: %v, want ErrNotFound", err)
	}
	if docs, err := schema.ShardsRef(client, "v").Documents(ctx).GetAll(); err != nil || len(docs) != 0 {
		t.Errorf("%d shards after a member increment of the deleted counter (%v), want none", len(docs), err)
	}
	configure()
	countAnn(true)
	if got := sum(t, store, "v"); got != 1 {
		t.Errorf("new v = %d after ann, want 1", got)
	}
}

// TestOneMemberSentAtOnceFromManyInstancesCountsOnceWithoutFailing: a member sent 16 times at once
// through each of three instances (double clicks, resends) gets 48 answers within a request's
// time, none of them an error, one of them counted; the member counts once all time and in its bucket.
func TestOneMemberSentAtOnceFromManyInstancesCountsOnceWithoutFailing(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	opts := counter.Options{DefaultNumShards: 4, ShardCountCacheTTL: time.Minute}
	stores := []*counter.Store{counter.NewStore(client, schema, opts), counter.NewStore(client, schema, opts), counter.NewStore(client, schema, opts)}
	yes := true
	if _, err := stores[0].Lifecycle.Configure(ctx, "likes", counter.Settings{NumShards: 4, Windows: []string{"day"}, Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	var counted atomic.Int64
	var wg sync.WaitGroup
	for _, store := range stores {
		for range 40 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // the functions' REQUEST_TIMEOUT
				defer cancel()
				out, err := store.Increments.Increment(ctx, counter.Request{Counter: "likes", Member: "ann"})
				switch {
				case err != nil:
					t.Errorf("ann: %v", err)
				case out.Counted:
					counted.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if counted.Load() != 1 {
		t.Errorf("%d answers said counted, want 1", counted.Load())
	}
	if got := sum(t, stores[0], "likes"); got != 1 {
		t.Errorf("likes = %d, want 1 member", got)
	}
	wantBuckets(t, stores[0], "likes", map[string]map[string]int64{"day": {counter.Bucket("day", time.Now()): 1}})
}
