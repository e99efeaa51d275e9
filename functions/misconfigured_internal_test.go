package functions

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// TestDeclarationsThatCannotWorkStopTheFunctions: a COUNTER_SOURCES entry that cannot work leaves the
// instance serving nothing, with the entry and the rule it breaks logged at CRITICAL.
func TestDeclarationsThatCannotWorkStopTheFunctions(t *testing.T) {
	t.Setenv("K_SERVICE", "")
	file := filepath.Join(t.TempDir(), "sources.json")
	if err := os.WriteFile(file, []byte(`[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{user}"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COUNTER_SOURCES", file)
	savedInstance, savedLog := instance, startupLog
	t.Cleanup(func() { instance, startupLog = savedInstance, savedLog })
	instance = newStartup(func() (*Service, error) { return newInstance(os.Environ()) })
	var logs bytes.Buffer
	startupLog = cloudlog.New(&logs, slog.LevelInfo)
	rec := httptest.NewRecorder()
	lazyHTTP(func(*Service, http.ResponseWriter, *http.Request) {
		t.Error("an instance with a declaration that cannot work served a request")
	})(rec, httptest.NewRequest(http.MethodPost, "/CountDocumentWrite", strings.NewReader("")))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("answer %d, want 500", rec.Code)
	}
	for _, want := range []string{`"severity":"CRITICAL"`, "entry 0", "{user}, which the documents pattern does not have"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %s lacks %s", logs.String(), want)
		}
	}
}
