package functions_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
)

// TestCounterIDPatternRefusesOtherIDsEverywhere: with COUNTER_ID_PATTERN set, an increment, a
// Pub/Sub message (single or in a batch), a configuration and a Count of an ID it does not match as
// a whole get 400 with field "counter" (the message: acknowledged and logged as poison) and write
// nothing; the answer names the setting but never shows the pattern, which the log (DEBUG) gives the
// operator with the refused ID; matching IDs work, and a counter made before the pattern can still be
// reset and deleted.
func TestCounterIDPatternRefusesOtherIDsEverywhere(t *testing.T) {
	cfg := config.Default()
	cfg.CounterIDPattern = "post-[0-9]{1,6}"
	srv := newTestServer(t, cfg)
	refused := []string{"planted", "post-1x", "xpost-1", "post-1234567", "post-"}
	for _, id := range refused {
		for what, a := range map[string]answer{
			"increment": srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": id}),
			"configure": srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": id, "num_shards": 3}),
			"count":     srv.do(t, http.MethodGet, "/Count?counter="+id, "", nil),
		} {
			if a.status != http.StatusBadRequest || a.body["field"] != "counter" || !strings.Contains(a.raw, "COUNTER_ID_PATTERN") {
				t.Errorf("%s of %q: %d %s; want 400 field counter", what, id, a.status, a.raw)
			}
			if strings.Contains(a.raw, cfg.CounterIDPattern) {
				t.Errorf("%s of %q: the answer %s shows the pattern to the caller", what, id, a.raw)
			}
		}
		if !strings.Contains(srv.logs.String(), `"counter":"`+id+`","pattern":"`+cfg.CounterIDPattern+`"`) {
			t.Errorf("refusals of %q are not logged with the ID and the pattern for the operator", id)
		}
		for n, m := range map[string]pubsubMessage{
			"single-" + id: {data: []byte(`{"counter":"` + id + `"}`)},
			"batch-" + id:  {data: []byte(`{"increments":[{"counter":"post-7"},{"counter":"` + id + `"}]}`)},
		} {
			if err := srv.deliver(t, n, m); err != nil {
				t.Errorf("message %s: %v; want it acknowledged", n, err)
			}
		}
	}
	logged := byMessageID(readLogEntries(strings.NewReader(srv.logs.String())), "ERROR", logPoison)
	if len(logged) != 2*len(refused) {
		t.Errorf("poison logged for %v; want each of the %d messages", logged, 2*len(refused))
	}
	if !strings.Contains(srv.logs.String(), `"field":"increments[1].counter"`) {
		t.Error("a batch's refused ID is not logged with its field increments[1].counter")
	}
	if paths := testenv.DocumentPaths(t, srv.client); len(paths) != 0 {
		t.Errorf("refused requests wrote %v", paths)
	}
	srv.increment(t, "post-42", 1)
	if got := srv.count(t, "post-42"); got != 1 {
		t.Errorf("post-42 = %d, want 1", got)
	}

	// A counter planted before the pattern was set stays resettable and deletable.
	before := newTestServerWithClient(t, config.Default(), srv.client)
	before.increment(t, "planted", 5)
	if a := srv.postJSON(t, http.MethodPost, "/ConfigureCounter", map[string]any{"counter": "planted", "reset": true}); a.status != http.StatusOK {
		t.Errorf("reset of a counter made before the pattern: %d %s", a.status, a.raw)
	}
	if a := srv.do(t, http.MethodDelete, "/ConfigureCounter?counter=planted", "", nil); a.status != http.StatusOK {
		t.Errorf("delete of a counter made before the pattern: %d %s", a.status, a.raw)
	}
}
