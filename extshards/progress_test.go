package extshards_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/internal/testenv"
)

// countOf is what the extension's value of field is: doc's field plus every shard's and partial's.
func countOf(t *testing.T, client *firestore.Client, doc, field string) int64 {
	t.Helper()
	ctx := context.Background()
	var n int64
	snap, err := client.Doc(doc).Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		t.Fatal(err)
	}
	if err == nil {
		v, _ := snap.Data()[field].(int64)
		n += v
	}
	shards, err := client.Doc(doc).Collection(extshards.ShardsCollection).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shards {
		if strings.HasPrefix(s.Ref.ID, "\t") {
			entries, _ := s.Data()["_updates_"].([]any)
			for _, e := range entries {
				data, _ := e.(map[string]any)["_data_"].(map[string]any)
				v, _ := data[field].(int64)
				n += v
			}
			continue
		}
		v, _ := s.Data()[field].(int64)
		n += v
	}
	return n
}

// mainField reads doc's integer field (0 when missing).
func mainField(t *testing.T, client *firestore.Client, doc, field string) int64 {
	t.Helper()
	snap, err := client.Doc(doc).Get(context.Background())
	if status.Code(err) == codes.NotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	v, _ := snap.Data()[field].(int64)
	return v
}

// TestFoldNeverDropsPartialsThatCancelShards: a partial the extension left holds +1 and the user's
// shard −1 (an unlike): together they sum to zero, yet both are folded (or both kept), so the count
// stays what it was, on <doc> once nothing is left to fold.
func TestFoldNeverDropsPartialsThatCancelShards(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	const doc = "posts/cancel"
	createMain(t, client, doc)
	if _, err := client.Doc(doc).Set(ctx, map[string]any{"likes": 5}); err != nil {
		t.Fatal(err)
	}
	partial := client.Doc(doc).Collection(extshards.ShardsCollection).Doc("\tc1ab")
	if _, err := partial.Set(ctx, map[string]any{"_updates_": []any{
		map[string]any{"_id_": "a", "_data_": map[string]any{"likes": 1}},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := incrementShard(ctx, client, doc, "u1", map[string]int64{"likes": -1}); err != nil {
		t.Fatal(err)
	}
	if got := countOf(t, client, doc, "likes"); got != 5 {
		t.Fatalf("count before the fold = %d, want 5", got)
	}
	if _, err := newFolder(client, 50*time.Millisecond).Fold(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if got := countOf(t, client, doc, "likes"); got != 5 {
		t.Errorf("count after the fold = %d (main %d, shards left %q), want 5", got, mainField(t, client, doc, "likes"), shardIDs(t, client, doc))
	}
	if got, left := mainField(t, client, doc, "likes"), shardIDs(t, client, doc); got != 5 || len(left) != 0 {
		t.Errorf("main likes = %d, shards left %q; want 5 and none", got, left)
	}
}

// TestFoldIsNotStarvedByAppWritesToMain: the app writes another field of <doc> every 100 ms, more
// often than the fold interval (300 ms); a fold is still made, within a few intervals.
func TestFoldIsNotStarvedByAppWritesToMain(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	const doc = "posts/busy"
	if _, err := client.Doc(doc).Set(ctx, map[string]any{"seen": -1}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := client.Doc(doc).Set(ctx, map[string]any{"seen": i}, firestore.MergeAll); err != nil {
				t.Error(err)
				return
			}
		}
	})
	if err := incrementShard(ctx, client, doc, "u1", map[string]int64{"likes": 2}); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a liveness bound, loose for a loaded machine
	defer cancel()
	if _, err := newFolder(client, 300*time.Millisecond).Fold(fctx, doc); err != nil {
		t.Fatalf("fold while the app writes <doc> every 100 ms: %v", err)
	}
	if got := mainField(t, client, doc, "likes"); got != 2 {
		t.Errorf("main likes = %d, want 2", got)
	}
}

// TestFoldMovesPastShardsThatGiveNoWrite: more than MaxShardsPerFold shards that give no write
// (shards of non-numbers only, shards that cancel out) sort before a shard holding +1; the fold
// reaches that shard instead of re-reading the same page.
func TestFoldMovesPastShardsThatGiveNoWrite(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	const doc = "posts/junk"
	createMain(t, client, doc)
	shards := client.Doc(doc).Collection(extshards.ShardsCollection)
	bw := client.BulkWriter(ctx)
	for i := range extshards.MaxShardsPerFold + 10 {
		if _, err := bw.Set(shards.Doc(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)), map[string]any{"note": "not a number"}); err != nil {
			t.Fatal(err)
		}
	}
	bw.End()
	if err := incrementShard(ctx, client, doc, "ffffffff-ffff-ffff-ffff-ffffffffffff", map[string]int64{"likes": 1}); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := newFolder(client, 50*time.Millisecond).Fold(fctx, doc)
	if err != nil {
		t.Fatalf("fold past %d shards of non-numbers: %v", extshards.MaxShardsPerFold+10, err)
	}
	if got := mainField(t, client, doc, "likes"); got != 1 {
		t.Errorf("main likes = %d after %+v, want 1", got, res)
	}
}

// TestFoldLeavesWhatItDoesNotCount: the target counts likes and stats.views; shard a holds
// stats: 1 (a number where a map is counted) and likes, shard b stats.views and likes. The fold
// folds the counted numbers, leaves stats: 1 in shard a (which stays), and loses nothing.
func TestFoldLeavesWhatItDoesNotCount(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	const doc = "posts/mixed"
	createMain(t, client, doc)
	if err := incrementShard(ctx, client, doc, "a", map[string]int64{"stats": 1, "likes": 1}); err != nil {
		t.Fatal(err)
	}
	if err := incrementShard(ctx, client, doc, "b", map[string]int64{"stats.views": 2, "likes": 1}); err != nil {
		t.Fatal(err)
	}
	res, err := newFolder(client, 50*time.Millisecond).Fold(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := client.Doc(doc).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(snap.Data()), "map[likes:2 stats:map[views:2]]"; got != want {
		t.Errorf("main = %s after %+v, want %s", got, res, want)
	}
	a, err := client.Doc(doc).Collection(extshards.ShardsCollection).Doc(clientShard("a")).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(a.Data()), "map[likes:0 stats:1]"; got != want {
		t.Errorf("shard a = %s, want %s (its uncounted field kept)", got, want)
	}
}

// TestFoldRunsOneAtATimePerDocument: 30 clients write their shards for 3 s, each write followed by
// a call of the same Folder (one instance), as its trigger events would; no fold commit of that
// Folder is refused for the main document's version (which a second run, reading <doc> while the
// first commits, would be), and <doc> ends exact.
func TestFoldRunsOneAtATimePerDocument(t *testing.T) {
	project := testenv.NewProjectID()
	writer := testenv.FirestoreOf(t, project)
	var b billing
	folder := newFolder(countedClient(t, project, &b), 200*time.Millisecond)
	const doc = "posts/hot"
	createMain(t, writer, doc)
	ctx := context.Background()
	var written atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(3 * time.Second)
	for c := range 30 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if err := incrementShard(ctx, writer, doc, fmt.Sprintf("client-%d", c), map[string]int64{"likes": 1}); err != nil {
					t.Error(err)
					return
				}
				written.Add(1)
				wg.Go(func() {
					if _, err := folder.Fold(ctx, doc); err != nil {
						t.Error(err)
					}
				})
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if got := mainField(t, writer, doc, "likes"); got != written.Load() {
		t.Errorf("main likes = %d, want %d", got, written.Load())
	}
	if refused := b.refused.Load(); refused != 0 {
		t.Errorf("%d fold commits refused on the main document's version (%d applied): runs of one Folder overlapped", refused, b.applied.Load())
	}
	t.Logf("%d increments; %d fold commits applied, %d refused", written.Load(), b.applied.Load(), b.refused.Load())
}

// TestFoldWaitsForALateParent: shards (and a partial) under a main document that does not exist
// yet: the fold creates no document and leaves them waiting (Result.Waiting); once the app creates
// the document, the next fold counts them. Shards that waited longer than MaxWait are deleted
// uncounted (Result.Dropped).
func TestFoldWaitsForALateParent(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	const late, never = "pages/late", "pages/never"
	for _, doc := range []string{late, never} {
		if err := incrementShard(ctx, client, doc, "u1", map[string]int64{"visits": 1}); err != nil {
			t.Fatal(err)
		}
		partial := map[string]any{"_updates_": []any{map[string]any{"_id_": "a", "_data_": map[string]any{"visits": 3}}}}
		if _, err := client.Doc(doc).Collection(extshards.ShardsCollection).Doc("\tc1ab").Set(ctx, partial); err != nil {
			t.Fatal(err)
		}
	}
	folder := newFolder(client, 10*time.Millisecond)
	res, err := folder.Fold(ctx, late)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Doc(late).Get(ctx); status.Code(err) != codes.NotFound {
		t.Errorf("fold of %s: %+v; reading it: %v, want NotFound (no document planted)", late, res, err)
	}
	if res.Writes != 0 || res.Waiting != 2 || res.Dropped != 0 {
		t.Errorf("fold of %s = %+v, want no write, 2 waiting, none dropped", late, res)
	}
	if ids := shardIDs(t, client, late); len(ids) != 2 {
		t.Errorf("shards left under %s: %q, want both", late, ids)
	}
	createMain(t, client, late)
	if res, err := folder.Fold(ctx, late); err != nil || res.Waiting != 0 {
		t.Fatalf("fold after the app created %s: %+v, %v", late, res, err)
	}
	if got := mainField(t, client, late, "visits"); got != 4 {
		t.Errorf("%s visits = %d, want 4 (the shard and the partial that waited)", late, got)
	}

	impatient := newFolder(client, 10*time.Millisecond)
	extshards.SetMaxWait(impatient, time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	if res, err := impatient.Fold(ctx, never); err != nil || res.Dropped != 2 || res.Waiting != 0 {
		t.Errorf("fold of %s after its shards waited too long = %+v, %v; want 2 dropped", never, res, err)
	}
	if ids := shardIDs(t, client, never); len(ids) != 0 {
		t.Errorf("shards left under %s: %q, want none", never, ids)
	}
}
