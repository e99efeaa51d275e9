package functions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/testenv"
)

// TestFoldExtensionShardsFoldsOnlyWhatAnEventAsksFor: an event of a shard holding an increment folds
// its main document; the events of a fold's own writes (a shard at zero, a delete) and a subject
// outside the pattern are acknowledged without a fold (the main document stays as it is, although
// shards wait); every event is acknowledged.
func TestFoldExtensionShardsFoldsOnlyWhatAnEventAsksFor(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	cfg := config.Default()
	cfg.ExtensionFoldInterval = 100 * time.Millisecond
	cfg.ExtensionFolds = "posts/{post}:likes"
	var logs bytes.Buffer
	s := NewService(cfg, client, cloudlog.New(&logs, slog.LevelDebug))
	const doc = "posts/p1"
	if _, err := client.Doc(doc).Create(ctx, map[string]any{}); err != nil { // a fold creates no document
		t.Fatal(err)
	}
	shard := client.Doc(doc).Collection(extshards.ShardsCollection).Doc(testenv.ExtensionShardID)
	likes := func() any {
		snap, err := client.Doc(doc).Get(ctx)
		if err != nil {
			return nil
		}
		return snap.Data()["likes"]
	}
	deliver := func(subject string, value *firestorepb.Document) {
		t.Helper()
		e := event.New()
		e.SetID(testenv.UniqueID("event"))
		e.SetType(eventhttp.EventFirestoreDocWritten)
		e.SetSource("//firestore.googleapis.com/projects/p/databases/(default)")
		e.SetSubject(subject)
		if err := e.SetData("application/protobuf", testenv.DocumentEventData(t, value, nil)); err != nil {
			t.Fatal(err)
		}
		if err := s.FoldExtensionShards(ctx, e); err != nil {
			t.Fatalf("event %s: %v", subject, err)
		}
	}
	int64Field := func(n int64) map[string]*firestorepb.Value {
		return map[string]*firestorepb.Value{"likes": {ValueType: &firestorepb.Value_IntegerValue{IntegerValue: n}}}
	}
	name := "projects/p/databases/(default)/documents/" + doc + "/_counter_shards_/" + testenv.ExtensionShardID
	if _, err := shard.Set(ctx, map[string]any{"likes": firestore.Increment(3)}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	deliver("documents/"+doc+"/_counter_shards_/"+testenv.ExtensionShardID, &firestorepb.Document{Name: name, Fields: int64Field(0)})
	deliver("documents/"+doc+"/_counter_shards_/"+testenv.ExtensionShardID, nil)
	deliver("documents/"+doc, &firestorepb.Document{Name: name, Fields: int64Field(3)})
	if got := likes(); got != nil {
		t.Fatalf("likes = %v before any event asked for a fold, want none", got)
	}
	deliver("documents/"+doc+"/_counter_shards_/"+testenv.ExtensionShardID, &firestorepb.Document{Name: name, Fields: int64Field(3)})
	if got := likes(); got != int64(3) {
		t.Fatalf("likes = %v after the shard's event, want 3", got)
	}
	if !bytes.Contains(logs.Bytes(), []byte("not an extension shard document")) {
		t.Errorf("the event outside the pattern was not logged:\n%s", logs.String())
	}
}

// TestFoldExtensionShardsHoldsOneEventPerInstance: 20 extension clients write their shards for 3 s,
// each write's event delivered to one of two instances (two Services on one emulator), as Eventarc
// would. Each instance holds at most one event at a time (the carrier): no two of its events that
// took over 100 ms to answer (the local stack's slow answer; the others wait for nothing) overlap.
// Once every event is answered, the main document holds every increment. It logs the answer times.
func TestFoldExtensionShardsHoldsOneEventPerInstance(t *testing.T) {
	clients, _ := testenv.FirestoreInstancesWithCommits(t, 3)
	writer := clients[2]
	cfg := config.Default()
	cfg.ExtensionFoldInterval = 200 * time.Millisecond
	cfg.ExtensionFolds = "posts/{post}:likes"
	var logs [2]bytes.Buffer // each written by its instance's logger only
	services := []*Service{
		NewService(cfg, clients[0], cloudlog.New(&logs[0], slog.LevelWarn)),
		NewService(cfg, clients[1], cloudlog.New(&logs[1], slog.LevelWarn)),
	}
	const doc = "posts/many"
	ctx := context.Background()
	if _, err := writer.Doc(doc).Create(ctx, map[string]any{}); err != nil { // a fold creates no document
		t.Fatal(err)
	}
	for _, s := range services {
		// The first event of a document an instance has not seen waits for one read of it (whether
		// it exists): made here, before the load, it would otherwise hold the first burst's events.
		if exists, err := s.folds.folder.Exists(ctx, doc); err != nil || !exists {
			t.Fatalf("exists %s: %t, %v", doc, exists, err)
		}
	}
	type span struct{ start, end time.Time }
	var (
		mu      sync.Mutex
		slow    [2][]span // per instance: the events answered after more than 100 ms
		answers []time.Duration
		written atomic.Int64
		wg      sync.WaitGroup
	)
	deliver := func(instance int, shard string) {
		e := event.New()
		e.SetID(testenv.UniqueID("event"))
		e.SetType(eventhttp.EventFirestoreDocWritten)
		e.SetSource("//firestore.googleapis.com/projects/p/databases/(default)")
		e.SetSubject("documents/" + doc + "/_counter_shards_/" + shard)
		value := &firestorepb.Document{Name: "projects/p/databases/(default)/documents/" + doc + "/_counter_shards_/" + shard,
			Fields: map[string]*firestorepb.Value{"likes": {ValueType: &firestorepb.Value_IntegerValue{IntegerValue: 1}}}}
		if err := e.SetData("application/protobuf", testenv.DocumentEventData(t, value, nil)); err != nil {
			t.Error(err)
			return
		}
		start := time.Now()
		err := services[instance].FoldExtensionShards(ctx, e)
		end := time.Now()
		mu.Lock()
		answers = append(answers, end.Sub(start))
		if end.Sub(start) > 100*time.Millisecond {
			slow[instance] = append(slow[instance], span{start, end})
		}
		mu.Unlock()
		if err != nil {
			t.Errorf("event of shard %s: %v", shard, err)
		}
	}
	stop := time.Now().Add(3 * time.Second)
	for c := range 20 {
		wg.Go(func() {
			shard := fmt.Sprintf("00000000-0000-0000-0000-%012d", c)
			for i := 0; time.Now().Before(stop); i++ {
				if _, err := writer.Doc(doc).Collection(extshards.ShardsCollection).Doc(shard).Set(ctx,
					map[string]any{"likes": firestore.Increment(1)}, firestore.MergeAll); err != nil {
					t.Error(err)
					return
				}
				written.Add(1)
				wg.Go(func() { deliver((c+i)%2, shard) })
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	snap, err := writer.Doc(doc).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Data()["likes"]; got != written.Load() {
		t.Errorf("likes = %v once every event was answered, want %d", got, written.Load())
	}
	var mostHeld [2]int
	for i, spans := range slow {
		for _, a := range spans {
			overlapping := 0
			for _, b := range spans {
				if b.start.Before(a.end) && a.start.Before(b.end) {
					overlapping++
				}
			}
			mostHeld[i] = max(mostHeld[i], overlapping)
		}
	}
	if mostHeld[0] > 1 || mostHeld[1] > 1 {
		t.Errorf("an instance held up to %v slow events at once, want 1 (the carrier)", mostHeld)
	}
	slices.Sort(answers)
	t.Logf("%d events; answer time p50 %v, p99 %v, max %v; slow ones %d and %d, most held at once per instance %v",
		len(answers), answers[len(answers)/2].Round(time.Millisecond), answers[len(answers)*99/100].Round(time.Millisecond),
		answers[len(answers)-1].Round(time.Millisecond), len(slow[0]), len(slow[1]), mostHeld)
	if t.Failed() {
		t.Logf("logs:\n%s%s", logs[0].String(), logs[1].String())
	}
}

// shardEvent is the event of a write of doc's shard testenv.ExtensionShardID holding likes.
func shardEvent(t *testing.T, doc string, likes int64) event.Event {
	t.Helper()
	name := doc + "/" + extshards.ShardsCollection + "/" + testenv.ExtensionShardID
	e := event.New()
	e.SetID(testenv.UniqueID("event"))
	e.SetType(eventhttp.EventFirestoreDocWritten)
	e.SetSource("//firestore.googleapis.com/projects/p/databases/(default)")
	e.SetSubject("documents/" + name)
	value := &firestorepb.Document{Name: "projects/p/databases/(default)/documents/" + name,
		Fields: map[string]*firestorepb.Value{"likes": {ValueType: &firestorepb.Value_IntegerValue{IntegerValue: likes}}}}
	if err := e.SetData("application/protobuf", testenv.DocumentEventData(t, value, nil)); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestFoldExtensionShardsCannotRaiseAFieldOfAnUndeclaredDocument: the app's rules let a user write
// any subcollection of users/{uid} (users/{uid}/{sub}/{doc}), not its credits; EXTENSION_FOLDS
// declares the example's posts and pages. The user writes users/u1/_counter_shards_/<uuid>
// {credits: 1000000}: the event is acknowledged, logged, and credits stay 5.
func TestFoldExtensionShardsCannotRaiseAFieldOfAnUndeclaredDocument(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	cfg := config.Default()
	cfg.ExtensionFoldInterval = 100 * time.Millisecond
	cfg.ExtensionFolds = "pages/{page}:visits posts/{post}:likes,stats.views"
	var logs testenv.LogBuffer
	s := NewService(cfg, client, cloudlog.New(&logs, slog.LevelDebug))
	user := "users/" + testenv.UniqueID("u")
	if _, err := client.Doc(user).Set(ctx, map[string]any{"credits": 5}); err != nil {
		t.Fatal(err)
	}
	shard := client.Doc(user).Collection(extshards.ShardsCollection).Doc(testenv.ExtensionShardID)
	if _, err := shard.Set(ctx, map[string]any{"credits": firestore.Increment(1_000_000)}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	e := shardEvent(t, user, 0)
	value := &firestorepb.Document{Name: "projects/p/databases/(default)/documents/" + user + "/_counter_shards_/" + testenv.ExtensionShardID,
		Fields: map[string]*firestorepb.Value{"credits": {ValueType: &firestorepb.Value_IntegerValue{IntegerValue: 1_000_000}}}}
	if err := e.SetData("application/protobuf", testenv.DocumentEventData(t, value, nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldExtensionShards(ctx, e); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // a fold, were one started, would have written by now
	snap, err := client.Doc(user).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Data()["credits"]; got != int64(5) {
		t.Errorf("credits = %v after the user's shard was handled, want 5", got)
	}
	if !loggedEvent(t, &logs, EventFoldError, "not_declared") {
		t.Errorf("the shard of an undeclared document was not logged: %v", logs.Lines(t))
	}
}

// TestFoldExtensionShardsWaitsForALateParent: a client increments a shard of posts/<id> before the
// app created it. The shard's event fails (so that the platform redelivers it) while the document
// is missing, leaving the shard; once the app creates the document, the redelivered event folds it.
func TestFoldExtensionShardsWaitsForALateParent(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	cfg := config.Default()
	cfg.ExtensionFoldInterval = 100 * time.Millisecond
	cfg.ExtensionFolds = "posts/{post}:likes"
	var logs testenv.LogBuffer
	s := NewService(cfg, client, cloudlog.New(&logs, slog.LevelDebug))
	doc := "posts/" + testenv.UniqueID("late")
	shard := client.Doc(doc).Collection(extshards.ShardsCollection).Doc(testenv.ExtensionShardID)
	if _, err := shard.Set(ctx, map[string]any{"likes": firestore.Increment(1)}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	e := shardEvent(t, doc, 1)
	err := s.FoldExtensionShards(ctx, e)
	if !errors.Is(err, errMainMissing) {
		t.Fatalf("event of a shard under a missing document: %v, want errMainMissing (redeliver)", err)
	}
	if snap, err := shard.Get(ctx); err != nil || snap.Data()["likes"] != int64(1) {
		t.Fatalf("the waiting shard: %v, %v; want likes 1 kept", snap.Data(), err)
	}
	if _, err := client.Doc(doc).Create(ctx, map[string]any{"title": "late"}); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldExtensionShards(ctx, e); err != nil {
		t.Fatalf("the redelivered event once the document exists: %v", err)
	}
	snap, err := client.Doc(doc).Get(ctx) // the event carried: it returned once its fold was done
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Data()["likes"]; got != int64(1) {
		t.Errorf("likes = %v once the app created the document, want 1", got)
	}
	if !loggedEvent(t, &logs, EventFoldWaiting, "waiting") {
		t.Errorf("the waiting shards were not logged: %v", logs.Lines(t))
	}
}

// loggedEvent says whether logs hold a line of event with kind.
func loggedEvent(t *testing.T, logs *testenv.LogBuffer, event, kind string) bool {
	for _, l := range logs.Lines(t) {
		if l["event"] == event && l["kind"] == kind {
			return true
		}
	}
	return false
}
