package functions_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/cloudevents/sdk-go/v2/event"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/sources"
)

// TestCanaryReadsADeadTriggerAsStale: each scheduled tick after the first logs the canary's
// outcome; a tick after which the shard-write trigger did not run (dead) logs "stale", one after
// which it rolled the canary up logs "fresh", and one whose check fails logs "stale". No data is
// never what a dead trigger gives.
func TestCanaryReadsADeadTriggerAsStale(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	cfg := config.Default()
	cfg.CreateOnIncrement = false // the canary is created even so
	var logs testenv.LogBuffer
	s := functions.NewService(cfg, client, cloudlog.New(&logs, slog.LevelInfo))
	t.Cleanup(func() { _ = s.Shutdown(ctx) })
	outcomes := func() []string {
		var got []string
		for _, l := range logs.Lines(t) {
			if l["event"] == functions.EventRollupCanary {
				got = append(got, l["outcome"].(string))
			}
		}
		return got
	}
	tickEvent := func() event.Event {
		e := event.New()
		e.SetID(testenv.UniqueID("tick"))
		e.SetType(eventhttp.EventPubSubMessagePublished)
		e.SetSource("//pubsub.googleapis.com/projects/p/topics/" + shared.TopicRollupTick)
		return e
	}
	tick := func() {
		t.Helper()
		if err := s.RollupScheduled(ctx, tickEvent()); err != nil {
			t.Fatal(err)
		}
	}
	tick() // creates the canary: nothing to check yet
	tick() // the trigger is dead: nothing rolled the canary up
	if got := outcomes(); len(got) != 1 || got[0] != "stale" {
		t.Fatalf("canary outcomes after a tick with a dead trigger: %v, want [stale]", got)
	}
	// The trigger runs: an event of the canary's shard write.
	e := event.New()
	e.SetID(testenv.UniqueID("event"))
	e.SetType(eventhttp.EventFirestoreDocWritten)
	e.SetSource("//firestore.googleapis.com/projects/p/databases/(default)")
	e.SetSubject("documents/" + cfg.CountersCollection + "/" + functions.CanaryCounter + "/" + shared.ShardsCollection + "/0")
	if err := s.RollupOnShardWrite(ctx, e); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		snap, err := client.Collection(cfg.RollupsCollection).Doc(functions.CanaryCounter).Get(ctx)
		if err == nil && snap.Data()[shared.FieldCount] == int64(2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the trigger did not roll the canary up to 2: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	tick()
	tick() // dead again
	if got := outcomes(); len(got) != 3 || got[1] != "fresh" || got[2] != "stale" {
		t.Fatalf("canary outcomes: %v, want [stale fresh stale]", got)
	}
	// A check that cannot read Firestore is no check: stale, not silence.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_ = s.RollupScheduled(cancelled, tickEvent()) // the sweep fails too
	if got := outcomes(); len(got) != 4 || got[3] != "stale" {
		t.Fatalf("canary outcomes after a check that failed: %v, want [stale fresh stale stale]", got)
	}
}

// TestCollectionCanaryReadsADeadTriggerAsStale: each scheduled tick checks, per declaration with
// "canary": true, that its count-documents trigger saw the probe the tick before wrote, then writes
// the next. The probe's own write event, delivered to CountDocumentWrite, reads fresh at the next
// tick and counts nothing; a declaration whose events are dropped reads stale, and so does one that
// got only an old probe's event or a nonce another writer set; a failed check reads stale.
func TestCollectionCanaryReadsADeadTriggerAsStale(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	cfg := config.Default()
	var logs testenv.LogBuffer
	s := functions.NewService(cfg, client, cloudlog.New(&logs, slog.LevelInfo))
	t.Cleanup(func() { _ = s.Shutdown(ctx) })
	set, err := sources.Parse([]byte(`[
		{"documents": "posts/{post}/likes/{uid}", "counter": "likes-{post}", "mirror": "posts/{post}.likes", "canary": true},
		{"documents": "votes/{vote}", "counter": "poll-{field:poll}", "canary": true}]`), cfg.Schema())
	if err != nil {
		t.Fatal(err)
	}
	s.CountSources(set)
	live, dead := set.Declarations[0], set.Declarations[1]
	if live.ProbePath() != "posts/_counters_canary/likes/_counters_canary" || dead.ProbePath() != "votes/_counters_canary" {
		t.Fatalf("probe documents %s and %s", live.ProbePath(), dead.ProbePath())
	}
	outcomes := func() map[string][]string {
		got := map[string][]string{}
		for _, l := range logs.Lines(t) {
			if l["event"] == functions.EventCollectionCanary {
				got[l["declaration"].(string)] = append(got[l["declaration"].(string)], l["outcome"].(string))
			}
		}
		return got
	}
	want := func(what string, live, dead []string) {
		t.Helper()
		got := outcomes()
		if !slices.Equal(got["likes-{post}"], live) || !slices.Equal(got["poll-{field:poll}"], dead) {
			t.Fatalf("%s: outcomes %v, want likes-{post} %v and poll-{field:poll} %v", what, got, live, dead)
		}
	}
	tick := func(ctx context.Context) {
		e := event.New()
		e.SetID(testenv.UniqueID("tick"))
		e.SetType(eventhttp.EventPubSubMessagePublished)
		e.SetSource("//pubsub.googleapis.com/projects/p/topics/" + shared.TopicRollupTick)
		_ = s.RollupScheduled(ctx, e)
	}
	handler, _ := s.EntryPoint(functions.EntryCountDocumentWrite)
	// written is the probe document's current version as its write event carries it.
	written := func(path string) *firestorepb.Document {
		t.Helper()
		snap, err := client.Doc(path).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nonce, _ := snap.Data()[sources.ProbeID].(string)
		return &firestorepb.Document{Name: "projects/p/databases/(default)/documents/" + path,
			Fields:     map[string]*firestorepb.Value{sources.ProbeID: {ValueType: &firestorepb.Value_StringValue{StringValue: nonce}}},
			CreateTime: timestamppb.New(snap.CreateTime), UpdateTime: timestamppb.New(snap.UpdateTime)}
	}
	deliver := func(path string, doc *firestorepb.Document) { // the trigger: CountDocumentWrite gets the write
		t.Helper()
		rec := httptest.NewRecorder()
		if handler(rec, testenv.DocumentWritten(t, path, doc.UpdateTime.AsTime(), doc, nil)); rec.Code >= 300 {
			t.Fatalf("probe event answered %d %s", rec.Code, rec.Body)
		}
	}

	tick(ctx) // the first probes: nothing to check yet
	want("before the first probe", nil, nil)
	first := written(live.ProbePath())
	deliver(live.ProbePath(), first) // the votes trigger is dead: its events are dropped
	tick(ctx)
	want("after the likes probe was delivered and the votes probe dropped", []string{"fresh"}, []string{"stale"})
	counters, err := client.Collection(cfg.CountersCollection).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counters {
		if c.Ref.ID != functions.CanaryCounter {
			t.Errorf("a probe made counter %s", c.Ref.ID)
		}
	}
	if _, err := client.Doc("posts/_counters_canary").Get(ctx); err == nil {
		t.Error("the probe wrote the mirror document posts/_counters_canary")
	}

	// A redelivered old probe, and a nonce another writer set, neither hide the probe the trigger
	// saw nor stand in for one it missed.
	forge := func() {
		t.Helper()
		if _, err := client.Doc(live.ProbePath()).Set(ctx, map[string]any{sources.ProbeID: "forged"}); err != nil {
			t.Fatal(err)
		}
		deliver(live.ProbePath(), written(live.ProbePath()))
	}
	deliver(live.ProbePath(), written(live.ProbePath()))
	deliver(live.ProbePath(), first)
	forge()
	tick(ctx)
	want("after the probe's event, then an old probe's and a forged one", []string{"fresh", "fresh"}, []string{"stale", "stale"})
	deliver(live.ProbePath(), first)
	forge()
	deliver(dead.ProbePath(), written(dead.ProbePath())) // the votes trigger is back
	tick(ctx)
	want("after only an old and a forged likes probe, and the votes probe", []string{"fresh", "fresh", "stale"}, []string{"stale", "stale", "fresh"})

	// A check that cannot read Firestore is no check: stale, not silence.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tick(cancelled)
	want("after a check that failed", []string{"fresh", "fresh", "stale", "stale"}, []string{"stale", "stale", "fresh", "stale"})
}
