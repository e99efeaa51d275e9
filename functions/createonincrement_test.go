package functions_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
)

// TestCreateOnIncrementOffRefusesUnknownCounters: with CREATE_ON_INCREMENT=false an increment of an
// unknown counter answers 404 naming ConfigureCounter, a message for it is acknowledged and logged as
// poison, and nothing is written; ConfigureCounter still creates, and then increments count.
func TestCreateOnIncrementOffRefusesUnknownCounters(t *testing.T) {
	cfg := config.Default()
	cfg.CreateOnIncrement = false
	srv := newTestServer(t, cfg)
	a := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "post-1"})
	if a.status != http.StatusNotFound || a.body["field"] != "counter" || !strings.Contains(a.raw, "ConfigureCounter") {
		t.Errorf("increment of an unknown counter: %d %s; want 404 naming ConfigureCounter", a.status, a.raw)
	}
	for id, m := range map[string]pubsubMessage{
		"single": {data: []byte(`{"counter":"post-1"}`)},
		"batch":  {data: []byte(`{"increments":[{"counter":"post-1"},{"counter":"post-2"}]}`)},
	} {
		if err := srv.deliver(t, id, m); err != nil {
			t.Errorf("message %s for an unknown counter: %v; want it acknowledged", id, err)
		}
	}
	if logged := byMessageID(readLogEntries(strings.NewReader(srv.logs.String())), "ERROR", logPoison); len(logged) != 2 {
		t.Errorf("poison logged for %v; want both messages", logged)
	}
	if paths := testenv.DocumentPaths(t, srv.client); len(paths) != 0 {
		t.Errorf("refused increments wrote %v", paths)
	}

	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "post-1", "num_shards": 2}); a.status != http.StatusOK && a.status != http.StatusCreated {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	srv.increment(t, "post-1", 2)
	if err := srv.deliver(t, "after", pubsubMessage{data: []byte(`{"counter":"post-1"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := srv.count(t, "post-1"); got != 3 {
		t.Errorf("post-1 = %d after configuring it and two increments, want 3", got)
	}
}
