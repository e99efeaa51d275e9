package functions_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/internal/testenv"
)

// TestRefusedTokenFloodWritesBoundedLogs: a flood of requests with bad ID tokens on a public
// Increment writes a bounded number of log lines per refusal reason and minute (a few in full, then
// one summary line per reason), and the summary lines' counts add up to the refusals exactly, once
// the instance stops.
func TestRefusedTokenFloodWritesBoundedLogs(t *testing.T) {
	srv := newCallerServer(t, callerauth.Requirements{IDToken: true}, 0)
	const flood = 300
	floods := map[string]map[string]string{
		"id_token_invalid": {"Authorization": "Bearer not-a-jwt"},
		"id_token_missing": {},
	}
	for _, headers := range floods {
		for range flood {
			if a := srv.incrementAs(t, headers, `{"counter":"posts"}`); a.status != http.StatusUnauthorized {
				t.Fatalf("increment with %v: %d %s, want 401", headers, a.status, a.raw)
			}
		}
	}
	if err := srv.svc.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := testenv.JSONLines(t, srv.logs.String())
	// Per reason and minute: the lines written in full and one summary; the flood may straddle a
	// minute's end, so twice that.
	if bound := len(floods) * 2 * (5 + 1); len(lines) > bound {
		t.Errorf("%d refusals wrote %d log lines, want at most %d; the first: %v", len(floods)*flood, len(lines), bound, lines[0])
	}
	counted := map[string]float64{}
	for _, l := range lines {
		if l["event"] == "increments_refused" {
			counted[l["reason"].(string)] += l["count"].(float64)
		}
	}
	for reason := range floods {
		if counted[reason] != flood {
			t.Errorf("summary lines count %v refusals for reason %s, want %d (all summaries: %v)", counted[reason], reason, flood, counted)
		}
	}
}
