package functions_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/shared"
)

// TestUncountableCounterIsAcknowledgedAndNamed: a counter whose shard holds 1.5 (a console edit)
// gets a 500 from Count naming the counter and the shard; its trigger events and the scheduler's
// tick are acknowledged (no redelivery can fix it) and logged at ERROR with the counter's ID.
func TestUncountableCounterIsAcknowledgedAndNamed(t *testing.T) {
	srv := newTestServer(t, config.Default())
	ctx := context.Background()
	schema := config.Default().Schema()
	srv.increment(t, "broken", 3)
	// Shard 9 must be a second shard: when the increment landed on it, the sum would be 1.5, not 4.5.
	if snap, err := schema.ShardRef(srv.client, "broken", 9).Get(ctx); err == nil && snap.Exists() {
		if _, err := snap.Ref.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := schema.ShardRef(srv.client, "broken", 0).Set(ctx, snap.Data()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := schema.ShardRef(srv.client, "broken", 9).Set(ctx, map[string]any{shared.FieldCount: 1.5, shared.FieldWrites: 1}); err != nil {
		t.Fatal(err)
	}

	a := srv.do(t, http.MethodGet, "/Count?counter=broken", "", nil)
	msg, _ := a.body["error"].(string)
	if a.status != http.StatusInternalServerError || !bytesContains(msg, `"broken"`, "shard 9", "1.5") {
		t.Errorf("Count of an uncountable counter: %d %s; want 500 naming the counter and shard 9", a.status, a.raw)
	}

	if err := srv.svc.RollupOnShardWrite(ctx, shardWritten("broken", 9)); err != nil {
		t.Errorf("roll-up trigger of an uncountable counter asks for redelivery: %v; want it acknowledged", err)
	}
	tick := event.New()
	tick.SetID("tick-1")
	tick.SetType(eventhttp.EventPubSubMessagePublished)
	tick.SetSource("//pubsub.googleapis.com/projects/test/topics/counter-rollup-tick")
	if err := srv.svc.RollupScheduled(ctx, tick); err != nil {
		t.Errorf("sweep over an uncountable counter asks for redelivery: %v; want it acknowledged", err)
	}
	errorsNamingIt := 0
	for _, e := range readLogEntries(strings.NewReader(srv.logs.String())) {
		if e["severity"] == "ERROR" && strings.Contains(e["error"].(string), `"broken"`) && strings.Contains(e["error"].(string), "4.5") {
			errorsNamingIt++
		}
	}
	if errorsNamingIt < 2 {
		t.Errorf("%d ERROR entries name counter broken and its sum; want one for the trigger and one for the sweep:\n%s", errorsNamingIt, srv.logs)
	}
}
