package rollup

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// TestAMirrorIsWrittenWithItsRollup: a counter's mirror field is written in the commit that writes
// its roll-up, never in a commit of its own, so a slow instance's mirror cannot land after a newer
// one; two instances refreshing at once leave the mirror equal to the roll-up.
func TestAMirrorIsWrittenWithItsRollup(t *testing.T) {
	clients, commits := testenv.FirestoreInstancesWithCommits(t, 2)
	ctx := context.Background()
	schema := config.Default().Schema()
	id, post := testenv.UniqueID("mirrored"), testenv.UniqueID("post")
	if _, err := clients[0].Doc("posts/"+post).Set(ctx, map[string]any{"title": "t"}); err != nil {
		t.Fatal(err)
	}
	var engines []*Engine
	for _, c := range clients {
		engines = append(engines, NewEngine(c, schema, counter.NewStore(c, schema, counter.Options{DefaultNumShards: 2}), 10*time.Millisecond))
	}
	store := counter.NewStore(clients[0], schema, counter.Options{DefaultNumShards: 2})
	if _, err := store.Lifecycle.Configure(ctx, id, counter.Settings{NumShards: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[0].Collection(schema.Counters).Doc(id).Update(ctx, []firestore.Update{
		{Path: shared.FieldMirrorDocument, Value: "posts/" + post}, {Path: shared.FieldMirrorField, Value: "stats.likes"}}); err != nil {
		t.Fatal(err)
	}
	setUp := len(commits())
	for i := range 6 {
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: id, Delta: 1}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, e := range engines {
			wg.Go(func() {
				if _, err := e.Refresh(ctx, id, time.Now(), SourceScheduler); err != nil {
					t.Errorf("refresh %d: %v", i, err)
				}
			})
		}
		wg.Wait()
	}
	rollup, err := clients[0].Collection(schema.Rollups).Doc(id).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mirror, err := clients[0].Doc("posts/" + post).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := mirror.DataAt("stats.likes")
	if want := rollup.Data()[shared.FieldCount]; fmt.Sprint(got) != fmt.Sprint(want) || want != int64(6) {
		t.Errorf("mirror %v, roll-up %v: want both 6", got, want)
	}
	// A mirror whose document does not exist stays missing; the roll-up is written.
	refreshed := len(commits())
	if _, err := clients[0].Doc("posts/" + post).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	deleted := len(commits())
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: id, Delta: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := engines[0].Refresh(ctx, id, time.Now(), SourceScheduler); err != nil {
		t.Errorf("refresh with the mirror document missing: %v", err)
	}
	if snap, err := clients[0].Collection(schema.Rollups).Doc(id).Get(ctx); err != nil || snap.Data()[shared.FieldCount] != int64(7) {
		t.Errorf("roll-up with the mirror document missing: %v, %v; want count 7", snap, err)
	}
	if snap, err := clients[0].Doc("posts/" + post).Get(ctx); snap.Exists() {
		t.Errorf("the mirror created the missing document %s (%v)", snap.Ref.Path, err)
	}
	all := commits()
	for _, c := range append(all[setUp:refreshed:refreshed], all[deleted:]...) {
		if slices.Contains(c.Docs, "posts/"+post) && !slices.Contains(c.Docs, schema.Rollups+"/"+id) {
			t.Errorf("a commit wrote the mirror without the roll-up: %v", c.Docs)
		}
	}
}
