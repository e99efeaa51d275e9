package extshards_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/testenv"
)

// testTargets declare the documents and fields these tests count.
var testTargets = func() extshards.Targets {
	ts, err := extshards.ParseTargets("posts/{post}:likes,stats.views pages/{page}:visits,views " +
		"games/{game}:score.total users/{uid}/posts/{post}:likes")
	if err != nil {
		panic(err)
	}
	return ts
}()

// newFolder is a Folder of testTargets.
func newFolder(client *firestore.Client, interval time.Duration) *extshards.Folder {
	return extshards.NewFolder(client, interval, testTargets)
}

// clientShard is the shard ID, a UUID as the extension's clients make, that a test names name.
func clientShard(name string) string {
	if extshards.ExtensionShardID(name) {
		return name
	}
	h := sha256.Sum256([]byte(name))
	x := hex.EncodeToString(h[:16])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// incrementShard writes as the extension's clients do: set({path: increment(n)}, {merge: true}) on
// doc/_counter_shards_/clientShard(shard), the dotted field split into nested maps.
func incrementShard(ctx context.Context, client *firestore.Client, doc, shard string, fields map[string]int64) error {
	shard = clientShard(shard)
	updates := map[string]any{}
	for path, n := range fields {
		m := updates
		keys := splitDots(path)
		for _, k := range keys[:len(keys)-1] {
			child, ok := m[k].(map[string]any)
			if !ok {
				child = map[string]any{}
				m[k] = child
			}
			m = child
		}
		m[keys[len(keys)-1]] = firestore.Increment(n)
	}
	_, err := client.Doc(doc).Collection(extshards.ShardsCollection).Doc(shard).Set(ctx, updates, firestore.MergeAll)
	return err
}

func splitDots(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// createMain creates the main document doc, empty, as the app does before its clients count on it
// (a fold creates no document).
func createMain(t *testing.T, client *firestore.Client, doc string) {
	t.Helper()
	if _, err := client.Doc(doc).Create(context.Background(), map[string]any{}); err != nil {
		t.Fatalf("create main document %s: %v", doc, err)
	}
}

func shardIDs(t *testing.T, client *firestore.Client, doc string) []string {
	t.Helper()
	refs, err := client.Doc(doc).Collection(extshards.ShardsCollection).DocumentRefs(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range refs {
		ids = append(ids, r.ID)
	}
	return ids
}

func TestMainDocument(t *testing.T) {
	for path, want := range map[string]string{
		"posts/p1/_counter_shards_/abc":             "posts/p1",
		"users/u/posts/p/_counter_shards_/\tab":     "users/u/posts/p",
		"posts/p1":                                  "",
		"posts/p1/_counter_shards_/":                "",
		"posts/p1/_counter_shards_/a/b/c":           "",
		"posts/_counter_shards_/x":                  "",
		"_counter_shards_/_counter_shards_/x":       "",
		"a/b/_counter_shards_/c/_counter_shards_/d": "a/b/_counter_shards_/c",
		"a//_counter_shards_/x":                     "",
		"/a/b/_counter_shards_/x":                   "",
		"a\xff/b/_counter_shards_/x":                "", // not UTF-8: Firestore has no such path
		"a/../_counter_shards_/x":                   "",
	} {
		got, ok := extshards.MainDocument(path)
		if got != want || ok != (want != "") {
			t.Errorf("MainDocument(%q) = %q, %t; want %q", path, got, ok, want)
		}
	}
}

// TestFoldAddsShardsAndPartialsExactlyOnce: shards (nested fields, two fields in one shard), the
// extension's partials (_updates_ entries, a subtraction among them) and a shard with a non-numeric
// field are folded into the main document; other fields stay; folded shards are gone (the junk
// shard keeps its junk at zero); a second fold changes nothing.
func TestFoldAddsShardsAndPartialsExactlyOnce(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	const doc = "posts/p1"
	if _, err := client.Doc(doc).Set(ctx, map[string]any{"title": "hello", "likes": 5, "stats": map[string]any{"views": 2, "label": "x"}}); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(incrementShard(ctx, client, doc, "u1", map[string]int64{"likes": 3, "stats.views": 1}))
	must(incrementShard(ctx, client, doc, "u2", map[string]int64{"likes": 2}))
	shards := client.Doc(doc).Collection(extshards.ShardsCollection)
	_, err := shards.Doc("\tc1ab").Set(ctx, map[string]any{"_updates_": []any{
		map[string]any{"_id_": "a", "_data_": map[string]any{"likes": 10, "stats": map[string]any{"views": 4}}},
		map[string]any{"_id_": "b", "_data_": map[string]any{"likes": -4}},
	}})
	must(err)
	junkID := clientShard("junk")
	_, err = shards.Doc(junkID).Set(ctx, map[string]any{"likes": 1, "note": "kept"})
	must(err)

	folder := newFolder(client, 100*time.Millisecond)
	res, err := folder.Fold(ctx, doc)
	must(err)
	if res.Shards != 4 || res.Writes != 1 {
		t.Errorf("fold = %+v, want 4 shards and 1 write", res)
	}
	check := func() {
		t.Helper()
		snap, err := client.Doc(doc).Get(ctx)
		must(err)
		want := map[string]any{"title": "hello", "likes": int64(5 + 3 + 2 + 6 + 1), "stats": map[string]any{"views": int64(2 + 1 + 4), "label": "x"}}
		if got := snap.Data(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("main document = %v, want %v", got, want)
		}
		if ids := shardIDs(t, client, doc); !slices.Equal(ids, []string{junkID}) {
			t.Errorf("shards left: %q, want only junk", ids)
		}
		junk, err := shards.Doc(junkID).Get(ctx)
		must(err)
		if got := fmt.Sprint(junk.Data()); got != fmt.Sprint(map[string]any{"likes": int64(0), "note": "kept"}) {
			t.Errorf("junk shard = %s", got)
		}
	}
	check()
	if res, err := folder.Fold(ctx, doc); err != nil || res.Writes != 0 {
		t.Errorf("second fold = %+v, %v; want no write", res, err)
	}
	check()
}

// TestFoldWritesMainAtMostOncePerInterval: 40 clients write their shards for 4 s while three
// Folders (three instances) fold after every write; the main document is written at most once per
// interval (by Firestore's update times, read from the commits) and ends exactly at the sum.
func TestFoldWritesMainAtMostOncePerInterval(t *testing.T) {
	clients, commits := testenv.FirestoreInstancesWithCommits(t, 4)
	writer := clients[3]
	const doc, interval = "pages/home", time.Second
	createMain(t, writer, doc)
	folders := []*extshards.Folder{
		newFolder(clients[0], interval), newFolder(clients[1], interval), newFolder(clients[2], interval),
	}
	ctx := context.Background()
	var written atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(4 * time.Second)
	var lastWrite atomic.Int64
	for c := range 40 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				if err := incrementShard(ctx, writer, doc, fmt.Sprintf("client-%d", c), map[string]int64{"views": 1}); err != nil {
					t.Error(err)
					return
				}
				written.Add(1)
				lastWrite.Store(time.Now().UnixNano())
				wg.Go(func() {
					if _, err := folders[(c+i)%3].Fold(ctx, doc); err != nil {
						t.Error(err)
					}
				})
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	converged := time.Since(time.Unix(0, lastWrite.Load()))
	snap, err := writer.Doc(doc).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Data()["views"]; got != written.Load() {
		t.Errorf("views = %v, want %d", got, written.Load())
	}
	if ids := shardIDs(t, writer, doc); len(ids) != 0 {
		t.Errorf("%d shards left after the last fold", len(ids))
	}
	var times []time.Time
	for _, c := range commits() {
		if slices.Contains(c.Docs, doc) {
			times = append(times, c.Time)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(times); i++ {
		// The commits' times are when their answers arrived: allow 250 ms of the answers' jitter.
		if gap := times[i].Sub(times[i-1]); gap < interval-250*time.Millisecond {
			t.Errorf("main document written twice within %v (writes %d and %d)", gap, i-1, i)
		}
	}
	t.Logf("%d increments, %d main writes over %d shards' writes; converged %v after the last write",
		written.Load(), len(times), written.Load(), converged.Round(time.Millisecond))
}

// TestFoldUnderLostAnswersNeverDoublesOrLoses puts the fault proxy between the Folder and the
// emulator and loses a quarter of the fold commits' answers (after they applied) or requests: the
// Folder's callers retry failed folds as Eventarc redelivers, and after each fold the main document
// holds exactly what the clients wrote (a resent commit applied twice would show at once).
func TestFoldUnderLostAnswersNeverDoublesOrLoses(t *testing.T) {
	ff := testenv.FirestoreBehindFaultProxy(t)
	const doc = "games/g1"
	createMain(t, ff.Direct, doc)
	folder := newFolder(ff.Client, 200*time.Millisecond)
	ctx := context.Background()
	ff.Proxy.SetFaults(faultproxy.Faults{ResetRate: 0.1, DropResponseRate: 0.15, Match: []byte(extshards.ShardsCollection)})
	var want int64
	failures := 0
	for round := range 30 {
		for c := range 5 {
			n := int64(round + c + 1)
			if err := incrementShard(ctx, ff.Direct, doc, fmt.Sprintf("c%d", c), map[string]int64{"score.total": n}); err != nil {
				t.Fatal(err)
			}
			want += n
		}
		for {
			fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := folder.Fold(fctx, doc)
			cancel()
			if err == nil {
				// Every shard written before the fold is in: the main document says exactly that.
				if got := scoreTotal(t, ff.Direct, doc); got != want {
					t.Fatalf("after round %d: score.total = %d, want %d", round, got, want)
				}
				break
			}
			failures++
			if failures > 500 {
				t.Fatalf("fold keeps failing: %v", err)
			}
		}
	}
	ff.Proxy.SetFaults(faultproxy.Faults{})
	c := ff.Proxy.Counts()
	if c.DroppedResponses == 0 {
		t.Error("no answer was lost: the test proves nothing")
	}
	t.Logf("%d failed folds retried; proxy: %+v", failures, c)
}

// scoreTotal reads score.total of doc (0 when missing).
func scoreTotal(t *testing.T, client *firestore.Client, doc string) int64 {
	t.Helper()
	snap, err := client.Doc(doc).Get(context.Background())
	if status.Code(err) == codes.NotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	score, _ := snap.Data()["score"].(map[string]any)
	total, _ := score["total"].(int64)
	return total
}

// TestFoldOfAKilledInstanceIsRedeliveredExactlyOnce: an instance folds while every answer to its
// fold commit is lost (the commit applied or never arrived) and is killed (its client closed); the
// redelivered event, delivered five times at once to a new instance and then again, leaves the main
// document at exactly what the clients wrote.
func TestFoldOfAKilledInstanceIsRedeliveredExactlyOnce(t *testing.T) {
	// Only the fold's commit names the field path in a transform.
	commit := []byte("score.total")
	for name, c := range map[string]struct {
		faults  faultproxy.Faults
		applied bool
	}{
		"commit applied, answer lost": {faultproxy.Faults{DropResponseRate: 1, Match: commit}, true},
		"commit never arrived":        {faultproxy.Faults{ResetRate: 1, Match: commit}, false},
	} {
		t.Run(name, func(t *testing.T) {
			ff := testenv.FirestoreBehindFaultProxy(t)
			ctx := context.Background()
			const doc = "games/g2"
			createMain(t, ff.Direct, doc)
			var want int64
			for i := range 6 {
				if err := incrementShard(ctx, ff.Direct, doc, fmt.Sprintf("c%d", i), map[string]int64{"score.total": int64(i + 1)}); err != nil {
					t.Fatal(err)
				}
				want += int64(i + 1)
			}
			ff.Proxy.SetFaults(c.faults)
			killed := newFolder(ff.Client, 100*time.Millisecond)
			fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := killed.Fold(fctx, doc)
			cancel()
			if err == nil {
				t.Fatal("the fold succeeded although every answer was lost")
			}
			_ = ff.Client.Close()
			ff.Proxy.SetFaults(faultproxy.Faults{})
			if got, applied := scoreTotal(t, ff.Direct, doc), c.applied; (got == want) != applied {
				t.Fatalf("after the killed fold score.total = %d; want the commit applied %t", got, applied)
			}

			next := newFolder(ff.Direct, 100*time.Millisecond)
			var wg sync.WaitGroup
			for range 5 {
				wg.Go(func() {
					if _, err := next.Fold(ctx, doc); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if _, err := next.Fold(ctx, doc); err != nil {
				t.Fatal(err)
			}
			if got := scoreTotal(t, ff.Direct, doc); got != want {
				t.Errorf("score.total = %d, want %d", got, want)
			}
			if ids := shardIDs(t, ff.Direct, doc); len(ids) != 0 {
				t.Errorf("shards left: %q", ids)
			}
		})
	}
}

// TestSweepFoldsWhatTheExtensionLeftExactlyOnce: the extension, uninstalled mid-aggregation, left a
// main document, a partial whose first entry its controller already counted (and subtracted with a
// second entry), a partial not yet counted, and a shard; on another document a shard only. The
// sweep folds each exactly once, and a second sweep changes nothing.
func TestSweepFoldsWhatTheExtensionLeftExactlyOnce(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	const a, b = "pages/a", "users/u1/posts/p1"
	createMain(t, client, b)
	if _, err := client.Doc(a).Set(ctx, map[string]any{"visits": 10, "title": "A"}); err != nil {
		t.Fatal(err)
	}
	partial := func(doc, id string, amounts ...int64) {
		var entries []any
		for i, n := range amounts {
			entries = append(entries, map[string]any{"_id_": fmt.Sprint(i), "_data_": map[string]any{"visits": n}})
		}
		if _, err := client.Doc(doc).Collection(extshards.ShardsCollection).Doc(id).Set(ctx, map[string]any{"_updates_": entries}); err != nil {
			t.Fatal(err)
		}
	}
	partial(a, "\tabcd", 7, -7)
	partial(a, "\t\tabc", 3)
	if err := incrementShard(ctx, client, a, "abcdef01", map[string]int64{"visits": 2}); err != nil {
		t.Fatal(err)
	}
	if err := incrementShard(ctx, client, b, "ffff", map[string]int64{"likes": 4}); err != nil {
		t.Fatal(err)
	}
	folder := newFolder(client, 100*time.Millisecond)
	for range 2 {
		if n, err := folder.Sweep(ctx); err != nil {
			t.Fatal(err)
		} else {
			t.Logf("swept %d documents", n)
		}
		for doc, want := range map[string]string{a: "map[title:A visits:15]", b: "map[likes:4]"} {
			snap, err := client.Doc(doc).Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(snap.Data()); got != want {
				t.Errorf("%s = %s, want %s", doc, got, want)
			}
			if ids := shardIDs(t, client, doc); len(ids) != 0 {
				t.Errorf("%s: shards left: %q", doc, ids)
			}
		}
	}
}
