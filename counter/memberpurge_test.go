package counter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// TestResetAndDeleteLeaveNoMemberDocumentsBehind: a distinct counter with a day window, its members'
// documents in counter_members and (a counter of a release before it) in the legacy members
// collection. After a Reset, PurgeMembers deletes the W+1 documents of every member of the old epoch
// and keeps those of the new one (counted after the Reset, also by a Store whose cache is stale);
// after a Delete it deletes them all. More than MaxMembersPerPurge documents take several calls, each
// bounded, until it says none is left.
func TestResetAndDeleteLeaveNoMemberDocumentsBehind(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 2, ShardCountCacheTTL: time.Hour})
	stale := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 2, ShardCountCacheTTL: time.Hour})
	seedLegacyCounter(t, client, store, "v") // ann and bob: 4 legacy documents
	countMembers(t, stale, "v", map[string]bool{"ann": false, "cy": true})
	members := counter.MaxMembersPerPurge/2 + 10 // with their day: more documents than one call deletes
	for m := range members {
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "v", Member: fmt.Sprint("m", m)}); err != nil {
			t.Fatal(err)
		}
	}
	all := func() int {
		return len(memberDocs(t, client, "v", shared.MembersCollection)) + len(memberDocs(t, client, "v", shared.LegacyMembersCollection))
	}
	before := all()
	if before <= counter.MaxMembersPerPurge {
		t.Fatalf("%d member documents before the reset, want more than %d", before, counter.MaxMembersPerPurge)
	}
	if _, err := store.Lifecycle.Reset(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	// Counted after the reset (stale's cache holds the old epoch): these stay.
	countMembers(t, stale, "v", map[string]bool{"ann": true, "dee": true})
	purge := func() (calls int) {
		t.Helper()
		for more := true; more; calls++ {
			deleted, m, err := store.Members.PurgeMembers(ctx, "v")
			if err != nil {
				t.Fatal(err)
			}
			if deleted > 2*counter.MaxMembersPerPurge {
				t.Fatalf("one call deleted %d documents, more than MaxMembersPerPurge (%d) per collection", deleted, counter.MaxMembersPerPurge)
			}
			more = m
			if calls > 10 {
				t.Fatal("PurgeMembers still says more after 10 calls")
			}
		}
		return calls
	}
	if calls := purge(); calls < 2 {
		t.Errorf("purged %d documents in %d call, want several bounded calls", before, calls)
	}
	if got := all(); got != 8 {
		t.Errorf("%d member documents after the reset's purge, want 8 (ann and dee, all time and day, in both collections)", got)
	}
	countMembers(t, store, "v", map[string]bool{"ann": false, "dee": false, "bob": true})
	if err := store.Lifecycle.Delete(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	purge()
	if got := all(); got != 0 {
		t.Errorf("%d member documents after the delete's purge, want none", got)
	}
}
