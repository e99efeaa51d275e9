package extshards_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/internal/testenv"
)

func TestParseTargets(t *testing.T) {
	ts, err := extshards.ParseTargets(" pages/{page}:visits  users/{uid}/posts/{post}:likes,stats.views ")
	if err != nil || fmt.Sprint(ts) != "[{pages/{page} [visits]} {users/{uid}/posts/{post} [likes stats.views]}]" {
		t.Errorf("ParseTargets = %v, %v", ts, err)
	}
	for _, bad := range []string{
		"pages/{page}",                             // no field
		"pages:visits",                             // a collection, not documents
		"{c}/{d}:visits",                           // a wildcard collection
		"pages/{page}:stats,stats.views",           // a number and the map holding another
		"pages/{page}:a b",                         // the second entry has no field
		"pages/{page}:visits pages/home:likes",     // two patterns for one document
		"pages/{page}/_counter_shards_/{s}:visits", // shards are not main documents
		"pages/{page}:vis-its",                     // not a field name
		"pages/{page}:visits,visits",               // named twice
	} {
		if _, err := extshards.ParseTargets(bad); err == nil {
			t.Errorf("ParseTargets(%q) accepted", bad)
		} else {
			t.Logf("%q: %v", bad, err)
		}
	}
	for doc, want := range map[string]string{"pages/p1": "pages/{page}", "users/u/posts/p": "users/{uid}/posts/{post}", "pages": "", "users/u": "", "pages/p/x/y": ""} {
		got, ok := ts.Match(doc)
		if got.Pattern != want || ok != (want != "") {
			t.Errorf("Match(%q) = %q, %t; want %q", doc, got.Pattern, ok, want)
		}
	}
}

func TestExtensionShardID(t *testing.T) {
	for id, want := range map[string]bool{
		"0d3f2b4e-8a1c-4b7e-9f00-123456789abc": true, "0D3F2B4E-8A1C-4B7E-9F00-123456789ABC": true,
		"\t0d3f": true, "\t\t0d3": true, "\t\t\t0d": true, "\t\t\t\t0": true,
		"x": false, "client-1": false, "\tzzzz": false, "\t0d3f2": false, "\t\t0d3f": false, "0d3f2b4e8a1c4b7e9f00123456789abc": false,
	} {
		if got := extshards.ExtensionShardID(id); got != want {
			t.Errorf("ExtensionShardID(%q) = %t, want %t", id, got, want)
		}
	}
}

// TestFoldCannotRaiseAFieldItWasNotToldToCount: an app's rules let a user write any subcollection
// of users/{uid}, not its credits. The user writes users/u1/_counter_shards_/<uuid>
// {credits: 1000000}: the fold refuses users/u1 (no target declares it), and credits stay 5. On a
// declared document, an uncounted field in a shard stays there, a partial holding one is left whole,
// and a shard whose ID is not of the extension's form is not folded.
func TestFoldCannotRaiseAFieldItWasNotToldToCount(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	const user, post = "users/u1", "posts/p1"
	for _, doc := range []string{user, post} {
		if _, err := client.Doc(doc).Set(ctx, map[string]any{"credits": 5}); err != nil {
			t.Fatal(err)
		}
	}
	if err := incrementShard(ctx, client, user, "attacker", map[string]int64{"credits": 1_000_000}); err != nil {
		t.Fatal(err)
	}
	if err := incrementShard(ctx, client, post, "attacker", map[string]int64{"credits": 1_000_000, "likes": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Doc(post).Collection(extshards.ShardsCollection).Doc("x").Set(ctx, map[string]any{"likes": 1000}); err != nil {
		t.Fatal(err)
	}
	partial := map[string]any{"_updates_": []any{map[string]any{"_id_": "a", "_data_": map[string]any{"likes": 2, "credits": 1000}}}}
	if _, err := client.Doc(post).Collection(extshards.ShardsCollection).Doc("\tabcd").Set(ctx, partial); err != nil {
		t.Fatal(err)
	}
	folder := newFolder(client, 10*time.Millisecond)
	if res, err := folder.Fold(ctx, user); !errors.Is(err, extshards.ErrNotDeclared) {
		t.Errorf("fold of %s = %+v, %v; want ErrNotDeclared", user, res, err)
	}
	res, err := folder.Fold(ctx, post)
	if err != nil {
		t.Fatal(err)
	}
	var uncounted *extshards.UncountedFieldsError
	if res.Ignored != 1 || len(res.Skipped) != 1 || !errors.As(res.Skipped[0], &uncounted) {
		t.Errorf("fold of %s = %+v, want the shard x ignored and the partial skipped", post, res)
	}
	if n, err := folder.Sweep(ctx); err != nil || n != 1 {
		t.Errorf("sweep folded %d documents, %v; want 1 (%s only)", n, err, post)
	}
	if got := mainField(t, client, user, "credits"); got != 5 {
		t.Errorf("%s credits = %d, want 5", user, got)
	}
	if got, likes := mainField(t, client, post, "credits"), mainField(t, client, post, "likes"); got != 5 || likes != 1 {
		t.Errorf("%s credits = %d, likes = %d; want 5 and 1", post, got, likes)
	}
}

// TestFoldReadsMainAndShardsAtOneTime: the app creates the main document, and a client writes a
// shard, between the fold's read of the main document (missing) and of its shards. Nothing is
// deleted uncounted: the fold leaves what it read waiting, and the next fold counts every shard.
func TestFoldReadsMainAndShardsAtOneTime(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	const doc = "pages/racing"
	if err := incrementShard(ctx, client, doc, "early", map[string]int64{"visits": 1}); err != nil {
		t.Fatal(err)
	}
	folder := newFolder(client, 10*time.Millisecond)
	var once atomic.Bool
	extshards.SetBetweenReads(folder, func(string) {
		if once.Swap(true) {
			return
		}
		createMain(t, client, doc)
		if err := incrementShard(ctx, client, doc, "late", map[string]int64{"visits": 2}); err != nil {
			t.Error(err)
		}
	})
	res, err := folder.Fold(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fold with the document created between its reads: %+v", res)
	if _, err := folder.Fold(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if got := mainField(t, client, doc, "visits"); got != 3 {
		t.Errorf("visits = %d (shards left %q), want 3", got, shardIDs(t, client, doc))
	}
}

// TestNotifyRetriesATransientFailure: the fold's first two reads fail with Unavailable; Notify's
// fold is tried again and folds, and its outcome reports no error.
func TestNotifyRetriesATransientFailure(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	const doc = "pages/flaky"
	createMain(t, client, doc)
	if err := incrementShard(ctx, client, doc, "u1", map[string]int64{"visits": 1}); err != nil {
		t.Fatal(err)
	}
	folder := newFolder(client, 10*time.Millisecond)
	var failures atomic.Int64
	extshards.SetBeforeRead(folder, func(string) error {
		if failures.Add(1) <= 2 {
			return status.Error(codes.Unavailable, "injected")
		}
		return nil
	})
	done := make(chan error, 1)
	if _, err := folder.Notify(ctx, doc, func(_ extshards.Result, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("fold after two transient failures: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no outcome in 30 s")
	}
	if got := mainField(t, client, doc, "visits"); got != 1 {
		t.Errorf("visits = %d, want 1", got)
	}
}
