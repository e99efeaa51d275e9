package counter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// TestDistinctMemberCountsOnceAfterAResetSeenByAStaleInstance: instance B's cached configuration
// still holds the member epoch from before instance A's Reset (a long cache TTL holds it stale on
// purpose). A member B sends after the Reset has committed counts in the new epoch, so when it is
// sent again, through A or B, it is not counted a second time.
func TestDistinctMemberCountsOnceAfterAResetSeenByAStaleInstance(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	opts := counter.Options{DefaultNumShards: 2, ShardCountCacheTTL: time.Hour}
	a, b := counter.NewStore(client, schema, opts), counter.NewStore(client, schema, opts)
	yes := true
	if _, err := a.Lifecycle.Configure(ctx, "visitors", counter.Settings{NumShards: 2, Windows: []string{"day"}, Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"warm-0", "warm-1", "warm-2", "warm-3"} { // B's cache is warm, every shard written
		if _, err := b.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: m}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Lifecycle.Reset(ctx, "visitors"); err != nil {
		t.Fatal(err)
	}
	if out, err := b.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: "ann"}); err != nil || !out.Counted {
		t.Fatalf("ann through the stale instance after the reset: %+v, %v; want counted", out, err)
	}
	for name, s := range map[string]*counter.Store{"A": a, "B": b} {
		if out, err := s.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: "ann"}); err != nil || out.Counted || len(out.Windows) > 0 {
			t.Errorf("ann again through %s: %+v, %v; want not counted, all time or today", name, out, err)
		}
	}
	if got := sum(t, a, "visitors"); got != 1 {
		t.Errorf("visitors = %d after the reset, want 1 (ann, once)", got)
	}
	wantBuckets(t, a, "visitors", map[string]map[string]int64{"day": {counter.Bucket("day", time.Now()): 1}})
}

// TestMemberIncrementsOfADeletedCounterAre404FromEveryInstance mirrors
// TestRequireExistingNeverBringsBackADeletedCounter for members: instances whose caches still hold a
// distinct counter (with windows and a group) keep counting members while another deletes it, with
// CREATE_ON_INCREMENT=false and with its default. Every member increment answered after the delete
// is refused with ErrNotFound (or was in flight across it), and neither the counter document nor a
// shard is left, so the roll-up has nothing to restore as a plain counter.
func TestMemberIncrementsOfADeletedCounterAre404FromEveryInstance(t *testing.T) {
	client := testenv.Firestore(t)
	ctx := context.Background()
	admin := requireExistingStore(client, 0)
	yes, group := true, "posts"
	if _, err := admin.Lifecycle.Configure(ctx, "doomed", counter.Settings{NumShards: 4, Windows: []string{"day"}, Distinct: &yes, Group: &group}); err != nil {
		t.Fatal(err)
	}
	warm := []*counter.Store{
		requireExistingStore(client, 0),
		counter.NewStore(client, schema, counter.Options{DefaultNumShards: 4, ShardCountCacheTTL: time.Hour}), // CREATE_ON_INCREMENT=true
	}
	for n, s := range warm {
		for i := range 8 { // shard counts cached, shards written
			if _, err := s.Increments.Increment(ctx, counter.Request{Counter: "doomed", Member: fmt.Sprintf("warm-%d-%d", n, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}

	incrementAcrossADelete(t, admin, "doomed", warm, func(s *counter.Store, n, g, i int) error {
		_, err := s.Increments.Increment(ctx, counter.Request{Counter: "doomed", Member: fmt.Sprintf("m-%d-%d-%d", n, g, i)})
		return err
	})
	for _, s := range warm { // and once more, alone, from each warm instance
		if _, err := s.Increments.Increment(ctx, counter.Request{Counter: "doomed", Member: "late"}); !errors.Is(err, counter.ErrNotFound) || !errors.Is(err, counter.ErrNotApplied) {
			t.Errorf("a member after the delete: %v, want ErrNotFound, not applied", err)
		}
	}
	for _, path := range testenv.DocumentPaths(t, client) {
		if isDedupe(path) || strings.HasPrefix(path, schema.Counters+"/doomed/"+shared.MembersCollection+"/") {
			continue // member documents of the old epoch stay behind by design
		}
		t.Errorf("%s exists after the delete; member increments must not bring the counter back", path)
	}
}

// TestKeyedMemberResentAcrossABucketBoundaryCountsInOneBucket: a member increment whose answer was
// lost just before midnight is sent again with its key just after, to another instance; it counts in
// the first day only, whether the first send counted the member (ann) or found it known (bob). The
// key with another member is ErrKeyReused; a new send of ann on the new day counts in it.
func TestKeyedMemberResentAcrossABucketBoundaryCountsInOneBucket(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	clock := &setClock{now: time.Date(2026, 11, 23, 23, 59, 59, 0, time.UTC)}
	opts := counter.Options{DefaultNumShards: 2, ShardCountCacheTTL: time.Minute, DedupeTTL: time.Hour, Clock: clock}
	first, second := counter.NewStore(client, schema, opts), counter.NewStore(client, schema, opts)
	yes := true
	if _, err := first.Lifecycle.Configure(ctx, "visitors", counter.Settings{Windows: []string{"day"}, Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	key := func(id string) *counter.Key { return &counter.Key{Source: counter.SourceHTTP, ID: id} }
	if _, err := first.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: "bob"}); err != nil {
		t.Fatal(err)
	}
	sent := map[string]counter.Result{}
	for member, k := range map[string]string{"ann": "k-ann", "bob": "k-bob"} {
		out, err := first.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: member, Key: key(k)})
		if err != nil || out.Duplicate {
			t.Fatalf("%s before midnight: %+v, %v", member, out, err)
		}
		sent[member] = out
	}
	clock.set(time.Date(2026, 11, 24, 0, 0, 1, 0, time.UTC))
	for member, k := range map[string]string{"ann": "k-ann", "bob": "k-bob"} {
		out, err := second.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: member, Key: key(k)})
		want := sent[member]
		want.Duplicate = true
		if err != nil || !out.Duplicate || out.Counted != want.Counted || out.Applied[0].Shard != want.Applied[0].Shard || len(out.Windows) != len(want.Windows) {
			t.Errorf("%s resent after midnight: %+v, %v; want the first answer %+v, duplicate", member, out, err, want)
		}
	}
	if _, err := second.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: "cy", Key: key("k-ann")}); !errors.Is(err, counter.ErrKeyReused) {
		t.Errorf("the key with another member: %v, want ErrKeyReused", err)
	}
	wantBuckets(t, first, "visitors", map[string]map[string]int64{"day": {"2026-11-23": 2, "2026-11-24": 0}})
	if out, err := second.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: "ann"}); err != nil || out.Counted || len(out.Windows) != 1 {
		t.Errorf("ann, sent anew on the new day: %+v, %v; want counted in its bucket only", out, err)
	}
	wantBuckets(t, first, "visitors", map[string]map[string]int64{"day": {"2026-11-23": 2, "2026-11-24": 1}})
	if got := sum(t, first, "visitors"); got != 2 {
		t.Errorf("visitors = %d, want 2 (ann, bob)", got)
	}
}

// tickingClock moves a minute forward after each read once started: whatever reads the time again
// during a call sees it move.
type tickingClock struct {
	setClock
	ticking bool
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now
	if c.ticking {
		c.now = c.now.Add(time.Minute)
	}
	return now
}

// TestAMemberPlannedAgainKeepsItsBucket: a member sent to a stale instance (its plan fails on the
// fence after a Reset and is made again) at 23:59 counts in that day, however late the clock reads
// while its call goes on.
func TestAMemberPlannedAgainKeepsItsBucket(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	clock := &tickingClock{setClock: setClock{now: time.Date(2026, 11, 23, 23, 59, 0, 0, time.UTC)}}
	opts := counter.Options{DefaultNumShards: 2, ShardCountCacheTTL: time.Hour, Clock: clock}
	a, b := counter.NewStore(client, schema, opts), counter.NewStore(client, schema, opts)
	yes := true
	if _, err := a.Lifecycle.Configure(ctx, "visitors", counter.Settings{NumShards: 2, Windows: []string{"day"}, Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: "warm"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Lifecycle.Reset(ctx, "visitors"); err != nil {
		t.Fatal(err)
	}
	clock.mu.Lock()
	clock.ticking = true
	clock.mu.Unlock()
	if out, err := b.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: "ann"}); err != nil || !out.Counted {
		t.Fatalf("ann: %+v, %v; want counted", out, err)
	}
	wantBuckets(t, a, "visitors", map[string]map[string]int64{"day": {"2026-11-23": 1, "2026-11-24": 0}})
}

// TestMembersOfACounterWithoutFencesRaiseThem: a distinct counter whose fences are missing (made
// before fences, or grown by adaptation) counts members from two instances at once: the first
// member increments raise the fences, and every member counts once.
func TestMembersOfACounterWithoutFencesRaiseThem(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	opts := counter.Options{DefaultNumShards: 4, ShardCountCacheTTL: time.Hour}
	stores := []*counter.Store{counter.NewStore(client, schema, opts), counter.NewStore(client, schema, opts)}
	yes := true
	if _, err := stores[0].Lifecycle.Configure(ctx, "legacy", counter.Settings{NumShards: 4, Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	fences := schema.CounterRef(client, "legacy").Collection(shared.MemberFencesCollection)
	raised, err := fences.Documents(ctx).GetAll()
	if err != nil || len(raised) != 4 {
		t.Fatalf("%d fences after configuring 4 shards (%v), want 4", len(raised), err)
	}
	for _, f := range raised {
		if _, err := f.Ref.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := stores[i%2].Increments.Increment(ctx, counter.Request{Counter: "legacy", Member: fmt.Sprint("m", i%10)}); err != nil {
				t.Errorf("member %d: %v", i%10, err)
			}
		})
	}
	wg.Wait()
	if got := sum(t, stores[0], "legacy"); got != 10 {
		t.Errorf("legacy = %d, want 10 members", got)
	}
	if again, err := fences.Documents(ctx).GetAll(); err != nil || len(again) != 4 {
		t.Errorf("%d fences after the members (%v), want 4 raised again", len(again), err)
	}
}
