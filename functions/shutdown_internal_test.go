package functions

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/shardcount/counters/gate"
)

// TestGateRefusesNewRequestsAndWaitsForAccepted: once the process stops, a new request gets 503 with
// Retry-After and "outcome":"not_applied" (docs/api.md) without reaching its handler, and the gate
// waits for the request it had accepted.
func TestGateRefusesNewRequestsAndWaitsForAccepted(t *testing.T) {
	t.Cleanup(func() { requests = gate.Gate{} })
	entered, release := make(chan struct{}), make(chan struct{})
	calls := 0
	h := gated(func(w http.ResponseWriter, _ *http.Request) {
		calls++
		close(entered)
		<-release
		writeJSON(w, http.StatusOK, map[string]string{"ok": "yes"})
	})
	accepted := httptest.NewRecorder()
	served := make(chan struct{})
	go func() {
		h(accepted, httptest.NewRequest(http.MethodPost, "/", nil))
		close(served)
	}()
	<-entered

	requests.Close()
	late := httptest.NewRecorder()
	h(late, httptest.NewRequest(http.MethodPost, "/", nil))
	if late.Code != http.StatusServiceUnavailable || late.Header().Get("Retry-After") == "" || calls != 1 {
		t.Errorf("request after stop: %d, Retry-After %q, handler called %d times; want 503 with Retry-After, handler not called",
			late.Code, late.Header().Get("Retry-After"), calls)
	}
	var body errorBody
	if err := json.Unmarshal(late.Body.Bytes(), &body); err != nil || body.Outcome != outcomeNotApplied || body.Error == "" {
		t.Errorf("request after stop: body %s (%v); want an error with \"outcome\":%q", late.Body.Bytes(), err, outcomeNotApplied)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := waitRequests(ctx); err == nil {
		t.Error("waitRequests returned nil while an accepted request was still running")
	}
	close(release)
	if err := waitRequests(context.Background()); err != nil {
		t.Errorf("waitRequests after the accepted request was answered: %v", err)
	}
	<-served
	if accepted.Code != http.StatusOK || accepted.Header().Get("Content-Length") == "" {
		t.Errorf("accepted request: %d, Content-Length %q; want 200 with its length", accepted.Code, accepted.Header().Get("Content-Length"))
	}
}

// TestRetryAfterIsJittered: the 503s of a stopping instance ask for waits spread over
// [retryAfterMin, retryAfterMax] seconds, not one fixed wait that brings every caller back at once,
// and each message names its own header's wait.
func TestRetryAfterIsJittered(t *testing.T) {
	t.Cleanup(func() { requests = gate.Gate{} })
	requests.Close()
	h := gated(func(http.ResponseWriter, *http.Request) { t.Error("handler called after stop") })
	seen := map[string]int{}
	for range 200 {
		w := httptest.NewRecorder()
		h(w, httptest.NewRequest(http.MethodPost, "/", nil))
		ra := w.Header().Get("Retry-After")
		seconds, err := strconv.Atoi(ra)
		if err != nil || seconds < retryAfterMin || seconds > retryAfterMax {
			t.Fatalf("Retry-After %q, want whole seconds in [%d, %d]", ra, retryAfterMin, retryAfterMax)
		}
		if !strings.Contains(w.Body.String(), "retry after "+ra+" s") {
			t.Errorf("body %s does not name its Retry-After %s", w.Body.String(), ra)
		}
		seen[ra]++
	}
	if len(seen) < 2 || len(seen) != retryAfterMax-retryAfterMin+1 {
		t.Errorf("Retry-After values %v over 200 answers, want each of %d..%d", seen, retryAfterMin, retryAfterMax)
	}
}
