package functions

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/shardcount/counters/functions/cloudlog"
)

// TestInvalidSettingsAnswer500AndLogEveryVariable: as docs/settings.md says, an instance whose
// settings are invalid starts, serves nothing (every request gets 500 without reaching the entry
// point), and logs every invalid variable at CRITICAL, at each request.
func TestInvalidSettingsAnswer500AndLogEveryVariable(t *testing.T) {
	t.Setenv("K_SERVICE", "")
	t.Setenv("MAX_DELTA", "0")
	t.Setenv("ROLLUP_INTERVAL", "fast")
	savedInstance, savedLog := instance, startupLog
	t.Cleanup(func() { instance, startupLog = savedInstance, savedLog })
	instance = newStartup(func() (*Service, error) { return newInstance(os.Environ()) })
	var logs bytes.Buffer
	startupLog = cloudlog.New(&logs, slog.LevelInfo)

	h := lazyHTTP(func(*Service, http.ResponseWriter, *http.Request) {
		t.Error("a misconfigured instance served a request")
	})
	const requests = 2
	for range requests {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodPost, "/Increment", strings.NewReader(`{"counter":"likes"}`)))
		if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "misconfigured") {
			t.Errorf("request to a misconfigured instance: %d %s; want 500 saying it is misconfigured", rec.Code, rec.Body)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != requests {
		t.Fatalf("logged %d lines, want one per request: %s", len(lines), logs.String())
	}
	for _, line := range lines {
		for _, want := range []string{`"severity":"CRITICAL"`, "MAX_DELTA", "ROLLUP_INTERVAL"} {
			if !strings.Contains(line, want) {
				t.Errorf("log line %s lacks %s", line, want)
			}
		}
	}
}
