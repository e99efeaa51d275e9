package functions_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
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
