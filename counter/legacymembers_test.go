package counter_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// memberDocs maps the IDs of counter id's member documents in collection to their data.
func memberDocs(t *testing.T, client *firestore.Client, id, collection string) map[string]map[string]any {
	t.Helper()
	docs, err := schema.CounterRef(client, id).Collection(collection).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]map[string]any{}
	for _, d := range docs {
		data[d.Ref.ID] = d.Data()
	}
	return data
}

// countMembers sends each member once through store and fails unless each is counted as want says.
func countMembers(t *testing.T, store *counter.Store, id string, want map[string]bool) {
	t.Helper()
	for _, m := range slices.Sorted(maps.Keys(want)) {
		out, err := store.Increments.Increment(context.Background(), counter.Request{Counter: id, Member: m})
		if err != nil || out.Counted != want[m] || len(out.Windows) > 0 != want[m] {
			t.Errorf("member %s: %+v, %v; want counted %t all time and in its day", m, out, err, want[m])
		}
	}
}

// seedLegacyCounter makes distinct counter id as a release before counter_members left it: no
// member_collection on the counter document, members ann and bob counted all time and in their day,
// their documents in the legacy members collection only.
func seedLegacyCounter(t *testing.T, client *firestore.Client, store *counter.Store, id string) {
	t.Helper()
	ctx := context.Background()
	yes := true
	if _, err := store.Lifecycle.Configure(ctx, id, counter.Settings{NumShards: 2, Windows: []string{"day"}, Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	countMembers(t, store, id, map[string]bool{"ann": true, "bob": true})
	counterRef := schema.CounterRef(client, id)
	for docID, data := range memberDocs(t, client, id, shared.MembersCollection) {
		if _, err := counterRef.Collection(shared.LegacyMembersCollection).Doc(docID).Create(ctx, data); err != nil {
			t.Fatal(err)
		}
		if _, err := counterRef.Collection(shared.MembersCollection).Doc(docID).Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := counterRef.Update(ctx, []firestore.Update{{Path: shared.FieldMemberCollection, Value: firestore.Delete}}); err != nil {
		t.Fatal(err)
	}
	if n := len(memberDocs(t, client, id, shared.LegacyMembersCollection)); n != 4 {
		t.Fatalf("seeded %d legacy member documents, want 4 (2 members, all time and day)", n)
	}
}

// TestMembersCountedUnderTheLegacyNameCountOnceThroughTheUpgrade: members a release before
// counter_members counted (documents in counters/{id}/members only) are not counted again by this
// release, before MoveLegacyMembers, after it, and on an instance that has not yet seen its mark;
// members new to the counter count once; after the passes no member document is left in the
// legacy collection, none is lost, and the counter's value and day bucket are the members counted.
func TestMembersCountedUnderTheLegacyNameCountOnceThroughTheUpgrade(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	day := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	opts := counter.Options{DefaultNumShards: 2, ShardCountCacheTTL: time.Hour, Clock: &setClock{now: day}}
	seedLegacyCounter(t, client, counter.NewStore(client, schema, opts), "v")

	// The upgraded functions, before the move: old members are found under the old name.
	upgraded := counter.NewStore(client, schema, opts)
	countMembers(t, upgraded, "v", map[string]bool{"ann": false, "bob": false, "carol": true})
	if n := len(memberDocs(t, client, "v", shared.LegacyMembersCollection)); n != 6 {
		t.Errorf("%d legacy member documents after carol, want 6: an unmarked counter's new members are created under both names", n)
	}

	// An instance whose cache still holds the counter unmarked (warm, held for an hour on purpose).
	stale := counter.NewStore(client, schema, opts)
	countMembers(t, stale, "v", map[string]bool{"ann": false})

	before := memberDocs(t, client, "v", shared.LegacyMembersCollection)
	pass, err := upgraded.Members.MoveLegacyMembers(ctx)
	if err != nil || pass.Moved != 6 || pass.Marked != 1 {
		t.Fatalf("first pass: %+v, %v; want 6 moved, 1 marked", pass, err)
	}
	if moved := memberDocs(t, client, "v", shared.MembersCollection); !maps.EqualFunc(moved, before, maps.Equal) {
		t.Errorf("counter_members after the move:\n%v\nwant the legacy documents as they were:\n%v", moved, before)
	}
	countMembers(t, stale, "v", map[string]bool{"bob": false, "carol": false, "dave": true})
	countMembers(t, counter.NewStore(client, schema, opts), "v", map[string]bool{"ann": false, "dave": false, "erin": true})

	pass, err = upgraded.Members.MoveLegacyMembers(ctx)
	if err != nil || pass.Moved != 2 {
		t.Errorf("second pass: %+v, %v; want dave's 2 documents the stale instance made moved", pass, err)
	}
	if pass, err = upgraded.Members.MoveLegacyMembers(ctx); err != nil || pass.Moved != 0 {
		t.Errorf("third pass: %+v, %v; want nothing left to move", pass, err)
	}
	if left := memberDocs(t, client, "v", shared.LegacyMembersCollection); len(left) != 0 {
		t.Errorf("legacy member documents left: %v", slices.Collect(maps.Keys(left)))
	}
	if n := len(memberDocs(t, client, "v", shared.MembersCollection)); n != 10 {
		t.Errorf("%d documents in counter_members, want 10 (5 members, all time and day)", n)
	}
	countMembers(t, counter.NewStore(client, schema, opts), "v", map[string]bool{"ann": false, "bob": false, "carol": false, "dave": false, "erin": false})
	if got := sum(t, upgraded, "v"); got != 5 {
		t.Errorf("v = %d, want 5 members", got)
	}
	wantBuckets(t, upgraded, "v", map[string]map[string]int64{"day": {"2026-11-24": 5}})
}

// TestNewCountersKeepMembersUnderTheNewNameOnly: a counter this release creates is marked, so its
// members are read and created in counter_members only, and a move pass has nothing to do.
func TestNewCountersKeepMembersUnderTheNewNameOnly(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 2, ShardCountCacheTTL: time.Hour})
	yes := true
	if _, err := store.Lifecycle.Configure(ctx, "w", counter.Settings{Windows: []string{"day"}, Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	countMembers(t, store, "w", map[string]bool{"ann": true})
	if n := len(memberDocs(t, client, "w", shared.MembersCollection)); n != 2 {
		t.Errorf("%d documents in counter_members, want 2", n)
	}
	if legacy := memberDocs(t, client, "w", shared.LegacyMembersCollection); len(legacy) != 0 {
		t.Errorf("a new counter's members under the legacy name: %v", legacy)
	}
	if pass, err := store.Members.MoveLegacyMembers(ctx); err != nil || pass.Moved != 0 {
		t.Errorf("move pass: %+v, %v; want nothing moved", pass, err)
	}
}
