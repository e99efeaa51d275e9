package functions_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

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

// TestMemberIncrementOfADeletedCounterIs404OnAStaleInstance: two instances (the second's cache held
// warm on purpose) with either CREATE_ON_INCREMENT; once the first has deleted a distinct counter, a
// member sent to the second answers 404 and no counter comes back.
func TestMemberIncrementOfADeletedCounterIs404OnAStaleInstance(t *testing.T) {
	for _, create := range []bool{false, true} {
		cfg := config.Default()
		cfg.CreateOnIncrement = create
		cfg.ShardCountCacheTTL = time.Hour
		admin := newTestServer(t, cfg)
		stale := newTestServerWithClient(t, cfg, admin.client)
		if a := admin.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "visitors", "distinct": true, "windows": []string{"day"}}); a.status != http.StatusCreated {
			t.Fatalf("configure: %d %s", a.status, a.raw)
		}
		if a := stale.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "visitors", "member": "warm"}); a.status != http.StatusOK {
			t.Fatalf("warm: %d %s", a.status, a.raw)
		}
		if a := admin.do(t, http.MethodDelete, "/ConfigureCounter?counter=visitors", "", nil); a.status != http.StatusOK {
			t.Fatalf("delete: %d %s", a.status, a.raw)
		}
		if a := stale.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "visitors", "member": "ann"}); a.status != http.StatusNotFound {
			t.Errorf("CREATE_ON_INCREMENT=%v: a member after the delete: %d %s, want 404", create, a.status, a.raw)
		}
		if a := admin.do(t, http.MethodGet, "/Count?counter=visitors", "", nil); a.status != http.StatusNotFound {
			t.Errorf("CREATE_ON_INCREMENT=%v: the counter after the delete: %d %s, want 404", create, a.status, a.raw)
		}
		if shards, err := config.Default().Schema().ShardsRef(admin.client, "visitors").Documents(t.Context()).GetAll(); err != nil || len(shards) != 0 {
			t.Errorf("CREATE_ON_INCREMENT=%v: %d shards after the delete (%v), want none", create, len(shards), err)
		}
	}
}
