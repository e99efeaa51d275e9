package functions

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
