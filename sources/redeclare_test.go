package sources_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/sources"
)

// redeclared is the revenue declaration of declarations with its where turned around and a mirror.
const redeclared = `[{"documents": "shops/{shop}/orders/{order}", "counter": "revenue-{shop}", "sum": "amount", "where": {"paid": false}, "mirror": "shops/{shop}.revenue"}]`

// quietAll marks every counter of client as last written five minutes ago.
func quietAll(t *testing.T, client *firestore.Client) {
	t.Helper()
	ctx := context.Background()
	snaps, err := client.Collection(schema.Counters).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range snaps {
		if _, err := snap.Ref.Update(ctx, []firestore.Update{{Path: shared.FieldTouchedMinute, Value: shared.UnixMinute(time.Now().Add(-5 * time.Minute))}}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkQuiet runs one quiet check of counting.
func checkQuiet(t *testing.T, client *firestore.Client, counting *sources.Counting) sources.QuietCheck {
	t.Helper()
	check, err := counting.CheckQuiet(context.Background(), client.Collection(schema.Counters), client.Doc("counters_sweep/drift"), time.Now(), 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return check
}

// exactUnder fails t unless counter id equals its documents under counting's declaration.
func exactUnder(t *testing.T, counting *sources.Counting, id string) {
	t.Helper()
	d, err := counting.Verify(context.Background(), id, time.Now())
	if err != nil || d.Value != d.Documents {
		t.Errorf("%s: %+v %v; want it equal to its documents", id, d, err)
	}
}

// TestAChangedDeclarationCountsExactlyAgain: a declaration whose where changes, and which gains a
// mirror, keeps its counters, and each becomes exact under the new one without a command: at its
// next document change, or, with none, at the sweep's quiet check, which also writes the mirror.
func TestAChangedDeclarationCountsExactlyAgain(t *testing.T) {
	client, newInstance := project(t)
	old := newInstance()
	w := newWriter(t, client)
	for _, shop := range []string{"s1", "s2"} {
		w.set("shops/"+shop, map[string]any{"name": shop})
		w.set("shops/"+shop+"/orders/o1", map[string]any{"amount": 5, "paid": true})
		w.set("shops/"+shop+"/orders/o2", map[string]any{"amount": 7, "paid": false})
	}
	deliver(t, w.writes, old)
	set, err := sources.Parse([]byte(redeclared), schema)
	if err != nil {
		t.Fatal(err)
	}
	now := instanceOf(t, client, set)
	// s1 has a change under the new declaration; s2 none.
	next := &writer{t: t, client: client, now: w.now}
	next.set("shops/s1/orders/o3", map[string]any{"amount": 11, "paid": false})
	deliver(t, next.writes, now)
	exactUnder(t, now, "revenue-s1")
	if d, _ := now.Verify(context.Background(), "revenue-s1", time.Now()); d.Value != 18 {
		t.Errorf("revenue-s1 %d, want 18: the unpaid orders", d.Value)
	}
	ctx := context.Background()
	if _, err := client.Doc("rollups/revenue-s2").Set(ctx, map[string]any{"count": 7}); err != nil {
		t.Fatal(err)
	}
	quietAll(t, client)
	check := checkQuiet(t, client, now)
	if !slices.Contains(check.Redefined, "revenue-s2") || slices.Contains(check.Redefined, "revenue-s1") {
		t.Errorf("rebased %v, want revenue-s2 (revenue-s1 was at its change)", check.Redefined)
	}
	exactUnder(t, now, "revenue-s2")
	if !slices.Contains(check.Mirrors, "revenue-s2") {
		t.Errorf("mirrors written %v, want revenue-s2's", check.Mirrors)
	}
	snap, err := client.Doc("shops/s2").Get(ctx)
	if err != nil || snap.Data()["revenue"] != int64(7) {
		t.Errorf("shops/s2 %v %v; want revenue 7, its roll-up's count", snap.Data(), err)
	}
}

// TestAStaleMirrorIsRepaired: an app write over a mirror field is put back to the roll-up's count
// by the next quiet check; a check of a mirror that matches writes nothing.
func TestAStaleMirrorIsRepaired(t *testing.T) {
	client, _ := project(t)
	set, err := sources.Parse([]byte(redeclared), schema)
	if err != nil {
		t.Fatal(err)
	}
	counting := instanceOf(t, client, set)
	w := newWriter(t, client)
	w.set("shops/s1", map[string]any{"name": "s1"})
	w.set("shops/s1/orders/o1", map[string]any{"amount": 4, "paid": false})
	deliver(t, w.writes, counting)
	ctx := context.Background()
	if _, err := client.Doc("rollups/revenue-s1").Set(ctx, map[string]any{"count": 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Doc("shops/s1").Set(ctx, map[string]any{"revenue": 999}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	quietAll(t, client)
	if check := checkQuiet(t, client, counting); !slices.Equal(check.Mirrors, []string{"revenue-s1"}) {
		t.Errorf("mirrors written %v, want revenue-s1's", check.Mirrors)
	}
	if snap, err := client.Doc("shops/s1").Get(ctx); err != nil || snap.Data()["revenue"] != int64(4) {
		t.Errorf("shops/s1 %v %v; want revenue 4", snap.Data(), err)
	}
	if check := checkQuiet(t, client, counting); len(check.Mirrors) != 0 {
		t.Errorf("second check wrote mirrors %v; want none", check.Mirrors)
	}
}

// TestADeclarationRemovedAndReAddedCountsExactlyAgain: likes written while no deployment declared
// them are counted once the declaration is back, by the quiet check.
func TestADeclarationRemovedAndReAddedCountsExactlyAgain(t *testing.T) {
	client, newInstance := project(t)
	counting := newInstance()
	w := newWriter(t, client)
	w.set("posts/p1/likes/u1", map[string]any{"at": 1})
	deliver(t, w.writes, counting)
	w.set("posts/p1/likes/u2", map[string]any{"at": 1}) // no deployment counts these
	w.set("posts/p1/likes/u3", map[string]any{"at": 1})
	quietAll(t, client)
	check := checkQuiet(t, client, counting)
	if len(check.Drifts) != 1 || check.Drifts[0].Counter != "likes-p1" {
		t.Errorf("drifts %+v, want likes-p1's", check.Drifts)
	}
	exactUnder(t, counting, "likes-p1")
}
