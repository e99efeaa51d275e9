package functions_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
)

// TestCrossOriginIncrementsOnTheEmulator: Increment served as deployed, with ALLOWED_ORIGINS, on the
// emulator. Preflights, from any origin and even with an increment's body, write nothing. An
// increment from a listed origin is counted and its answer carries the origin; CORS is no access
// control: one from another origin (or none) is counted too, its answer without CORS headers, which
// only a browser enforces.
func TestCrossOriginIncrementsOnTheEmulator(t *testing.T) {
	const listed, unlisted = "https://app.example.com", "https://elsewhere.example.net"
	cfg := config.Default()
	cfg.AllowedOrigins = listed + " http://localhost:5173"
	srv := newTestServer(t, cfg)
	id := testenv.UniqueID("cors")
	body := `{"counter":"` + id + `"}`

	send := func(method, origin string, preflight bool) answer {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+"/Increment", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if preflight {
			req.Header.Set("Access-Control-Request-Method", http.MethodPost)
			req.Header.Set("Access-Control-Request-Headers", "content-type")
		}
		return srv.send(t, req)
	}

	for _, origin := range []string{listed, unlisted} {
		a := send(http.MethodOptions, origin, true)
		if a.status != http.StatusNoContent || a.raw != "" {
			t.Errorf("preflight from %s: %d %q, want 204 and nothing", origin, a.status, a.raw)
		}
		if got, want := a.header.Get("Access-Control-Allow-Origin"), map[string]string{listed: listed}[origin]; got != want {
			t.Errorf("preflight from %s: Access-Control-Allow-Origin %q, want %q", origin, got, want)
		}
	}
	if docs := testenv.DocumentPaths(t, srv.client); len(docs) > 0 {
		t.Errorf("preflights wrote %v", docs)
	}

	for i, origin := range []string{listed, unlisted, ""} {
		a := send(http.MethodPost, origin, false)
		if a.status != http.StatusOK {
			t.Fatalf("increment from %q: %d %s", origin, a.status, a.raw)
		}
		if got, want := a.header.Get("Access-Control-Allow-Origin"), map[string]string{listed: listed}[origin]; got != want {
			t.Errorf("increment from %q: Access-Control-Allow-Origin %q, want %q", origin, got, want)
		}
		if got := a.header.Get("Vary"); got != "Origin" {
			t.Errorf("increment from %q: Vary %q, want Origin", origin, got)
		}
		if got := srv.count(t, id); got != int64(i+1) {
			t.Errorf("after the increment from %q: count %d, want %d", origin, got, i+1)
		}
	}
}
