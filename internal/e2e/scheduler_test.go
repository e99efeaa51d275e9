package e2e_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"

	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/publisher"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
)

// TestSchedulerTickConvergesARollupThatMissedItsEvents: a roll-up whose trigger events were lost
// (here: overwritten with a wrong, old value after the fact) is put right by the next scheduler tick,
// delivered as in production: a message on counter-rollup-tick pushed by Pub/Sub to RollupScheduled.
func TestSchedulerTickConvergesARollupThatMissedItsEvents(t *testing.T) {
	ctx := context.Background()
	stack := newStack(t)
	id := testenv.UniqueID("missed")
	for range 4 {
		if err := increment(stack, id, 5); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "trigger roll-up", func() bool {
		d := readRollup(t, stack, id)
		return d != nil && d.Count == 20
	})
	// Let every event of those increments be handled, so none of them repairs what comes next.
	waitFor(t, time.Minute, "all Firestore events delivered", func() bool { return eventsIdle(t, stack) })
	stale := map[string]any{shared.FieldCount: 3, shared.FieldUpdatedAt: time.Now().Add(-time.Hour)}
	if _, err := schema.RollupRef(stack.Client, id).Set(ctx, stale, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}

	publishTick(t, stack)
	took := waitFor(t, 30*time.Second, "scheduled roll-up", func() bool {
		d := readRollup(t, stack, id)
		return d.Count == 20 && d.Source == rollup.SourceScheduler
	})
	t.Logf("the tick's sweep corrected the roll-up %s after publishing", took.Round(time.Millisecond))
}

// publishTick publishes a tick on counter-rollup-tick, which Pub/Sub pushes to RollupScheduled as
// in production.
func publishTick(t *testing.T, stack *stack) {
	t.Helper()
	ctx := context.Background()
	client, err := pubsub.NewClient(ctx, stack.Project, publisher.EmulatorOptions(stack.PubSubHost)...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ticks := client.Publisher(localstack.TopicName(stack.Project, shared.TopicRollupTick))
	defer ticks.Stop()
	if _, err := ticks.Publish(ctx, &pubsub.Message{Data: []byte("tick")}).Get(ctx); err != nil {
		t.Fatal(err)
	}
}
