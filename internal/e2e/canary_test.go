package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/shardcount/counters/sources"
)

// TestProbesOfTheExampleDeclarationsRoundTripOnTheStack: a scheduler tick, delivered as in
// production, writes a probe document per example declaration (each opts in), and the stack's event
// bridge delivers its write to the declaration's CountDocumentWrite, which records the nonce the
// tick sent as seen (what the next check reads fresh); no probe makes a counter.
func TestProbesOfTheExampleDeclarationsRoundTripOnTheStack(t *testing.T) {
	ctx := context.Background()
	stack := newStack(t)
	publishTick(t, stack)
	records := stack.Client.Collection(schema.Sweep()).Doc("canaries").Collection("declarations")
	for _, template := range []string{"likes-{post}", "poll-{field:poll}-{field:choice}", "revenue-{shop}"} {
		took := waitFor(t, 30*time.Second, "the trigger of "+template+" to see its probe", func() bool {
			snap, err := records.Doc(template).Get(ctx)
			if err != nil {
				return false
			}
			sent, _ := snap.Data()["sent"].(string)
			return sent != "" && snap.Data()["seen"] == sent
		})
		t.Logf("%s: the probe's nonce was seen %s after the tick", template, took.Round(time.Millisecond))
	}
	for _, id := range []string{"likes-" + sources.ProbeID, "revenue-" + sources.ProbeID} {
		if snap, err := stack.Client.Collection(schema.Counters).Doc(id).Get(ctx); err == nil && snap.Exists() {
			t.Errorf("a probe made counter %s", id)
		}
	}
}
