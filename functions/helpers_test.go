package functions_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/internal/testenv"
)

// testServer serves the HTTP entry points of one Service over httptest as they are deployed, on a
// Firestore emulator project of its own.
type testServer struct {
	*httptest.Server
	client *firestore.Client
	svc    *functions.Service
	logs   *bytes.Buffer
}

func newTestServer(t *testing.T, cfg config.Config) *testServer {
	t.Helper()
	return newTestServerWithClient(t, cfg, testenv.Firestore(t))
}

func newTestServerWithClient(t *testing.T, cfg config.Config, client *firestore.Client) *testServer {
	t.Helper()
	logs := new(bytes.Buffer)
	svc := functions.NewService(cfg, client, cloudlog.New(logs, slog.LevelDebug))
	mux := http.NewServeMux()
	for _, name := range manifest.HTTPEntryPoints {
		h, ok := svc.EntryPoint(name)
		if !ok {
			t.Fatalf("no entry point %s", name)
		}
		mux.HandleFunc("/"+name, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &testServer{Server: srv, client: client, svc: svc, logs: logs}
}

// answer is a decoded HTTP answer.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// do sends a request and decodes its JSON answer.
func (s *testServer) do(t testing.TB, method, path, contentType string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return s.send(t, req)
}

// send sends req and decodes its JSON answer.
func (s *testServer) send(t testing.TB, req *http.Request) answer {
	t.Helper()
	method, path := req.Method, req.URL.RequestURI()
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if len(raw) > 0 && method != http.MethodHead {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			t.Fatalf("%s %s: answer is not a JSON object: %q", method, path, raw)
		}
	}
	return a
}

// postJSON sends v as JSON.
func (s *testServer) postJSON(t testing.TB, method, path string, v any) answer {
	t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return s.do(t, method, path, "application/json", body)
}

// increment adds delta to a counter and fails the test unless it was acknowledged.
func (s *testServer) increment(t testing.TB, id string, delta int64) {
	t.Helper()
	if a := s.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": id, "delta": delta}); a.status != http.StatusOK {
		t.Errorf("increment %q by %d: %d %s", id, delta, a.status, a.raw)
	}
}

// count reads a counter's exact value through Count.
func (s *testServer) count(t testing.TB, id string) int64 {
	t.Helper()
	a := s.do(t, http.MethodGet, "/Count?"+url.Values{"counter": {id}}.Encode(), "", nil)
	if a.status != http.StatusOK {
		t.Fatalf("count %q: %d %s", id, a.status, a.raw)
	}
	return int64(a.body["count"].(float64))
}

// bytesContains reports whether s contains every one of parts.
func bytesContains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
