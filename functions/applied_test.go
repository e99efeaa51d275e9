package functions_test

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/functions"
)

// TestAppliedIncrementsMetricCountsWhatTheDomainApplied: the increments_applied tally counts, per
// source, each shard write the domain reports and its delta, and nothing else: not a like over
// PER_CALLER_LIMIT, an Idempotency-Key replay, a known member or a redelivered message.
func TestAppliedIncrementsMetricCountsWhatTheDomainApplied(t *testing.T) {
	srv := newCallerServer(t, callerauth.Requirements{IDToken: true}, 5)
	ann, _ := authEmulatorUser(t, "ann.metric@example.com")
	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "visitors", "distinct": true}); a.status != http.StatusCreated {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	as := map[string]string{"Authorization": "Bearer " + ann}
	keyed := map[string]string{"Authorization": "Bearer " + ann, "Idempotency-Key": "order-1"}
	for i, st := range []struct {
		headers map[string]string
		body    string
		counted bool
	}{
		{as, `{"counter":"likes","delta":3}`, true},
		{as, `{"counter":"likes","delta":3}`, false}, // 6 is over the limit
		{keyed, `{"counter":"photo","delta":2}`, true},
		{keyed, `{"counter":"photo","delta":2}`, true}, // the replay of the first answer
		{as, `{"counter":"visitors"}`, true},
		{as, `{"counter":"visitors"}`, false},
	} {
		if a := srv.incrementAs(t, st.headers, st.body); a.status != http.StatusOK || a.body["counted"] != st.counted {
			t.Fatalf("step %d: %d %s, want 200 counted %v", i, a.status, a.raw, st.counted)
		}
	}
	batch := pubsubMessage{data: []byte(`{"increments":[{"counter":"a","delta":4},{"counter":"b","delta":5}]}`)}
	for range 2 {
		if err := srv.deliver(t, "m1", batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.svc.Shutdown(context.Background()); err != nil { // writes the tallies' summaries
		t.Fatal(err)
	}
	type tally struct{ count, delta float64 }
	got := map[string]tally{}
	for _, e := range readLogEntries(strings.NewReader(srv.logs.String())) {
		if source, ok := e["source"].(string); ok && e["event"] == functions.EventIncrementsApplied {
			got[source] = tally{got[source].count + e["count"].(float64), got[source].delta + e["delta"].(float64)}
		}
	}
	if want := map[string]tally{"http": {3, 6}, "pubsub": {2, 9}}; !maps.Equal(got, want) {
		t.Errorf("increments applied {count delta} by source: %v, want %v", got, want)
	}
}
