package functions

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/sources"
)

// The fuzz targets hold every decoder of the entry points to one contract: no input panics or gets
// a 5xx, and an input that is refused (a 4xx, or an event acknowledged as poison) writes nothing.
// The Service runs on a fresh emulator project whose every commit is recorded. `make test` runs each
// target for a few seconds, `make fuzz` longer; without -fuzz, `go test` runs the seeds.

// fuzzed is a Service under fuzzing, with what it wrote and logged.
type fuzzed struct {
	svc     *Service
	commits func() int
	logs    *bytes.Buffer
}

func newFuzzed(f *testing.F) *fuzzed {
	f.Helper()
	client, commits := testenv.FirestoreWithCommits(f)
	cfg := config.Default()
	cfg.GroupCommitInterval, cfg.ChangeCommitInterval = 0, 0 // valid writes commit at once: more inputs per second
	logs := new(bytes.Buffer)
	return &fuzzed{
		svc:     NewService(cfg, client, cloudlog.New(logs, slog.LevelWarn)),
		commits: func() int { return len(commits()) },
		logs:    logs,
	}
}

// inputBudget keeps an input well inside the fuzzing engine's 10 s per-input watchdog, which kills
// the worker process (a failure) on a loaded machine.
const inputBudget = 5 * time.Second

// serve sends r to h and holds the answer to the contract: below 500, and a refusal writes nothing.
// refused says whether the answer (or what was logged) refused the input.
func (z *fuzzed) serve(t *testing.T, h http.HandlerFunc, r *http.Request, refused func(*httptest.ResponseRecorder) bool) {
	t.Helper()
	z.logs.Reset()
	before := z.commits()
	w := httptest.NewRecorder()
	ctx, cancel := context.WithTimeout(r.Context(), inputBudget)
	defer cancel()
	h(w, r.WithContext(ctx))
	if w.Code >= 500 {
		if ctx.Err() != nil {
			return // the emulator was too slow to judge this input
		}
		t.Fatalf("%s %s answered %d: %s\nlogs: %s", r.Method, r.URL, w.Code, w.Body, z.logs)
	}
	if refused(w) {
		if wrote := z.commits() - before; wrote != 0 {
			t.Fatalf("%s %s was refused (%d %s) but made %d commits", r.Method, r.URL, w.Code, w.Body, wrote)
		}
	}
}

// refusedWith4xx: an HTTP entry point refuses with a 4xx and a JSON error saying why.
func refusedWith4xx(t *testing.T) func(*httptest.ResponseRecorder) bool {
	return func(w *httptest.ResponseRecorder) bool {
		if w.Code < 400 {
			return false
		}
		var body struct{ Error string }
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error == "" {
			t.Fatalf("refusal %d without a JSON error: %q", w.Code, w.Body)
		}
		return true
	}
}

// refusedAsPoison: an event entry point acknowledges an event that can never succeed and logs it at ERROR.
func (z *fuzzed) refusedAsPoison(w *httptest.ResponseRecorder) bool {
	return strings.Contains(z.logs.String(), `"severity":"ERROR"`)
}

func FuzzIncrement(f *testing.F) {
	for _, seed := range []struct{ body, contentType, key string }{
		{`{"counter":"likes"}`, "application/json", ""},
		{`{"counter":"likes","delta":-3}`, "application/json; charset=utf-8", "order-1"},
		{`{"counter":"a/b"}`, "application/json", ""},
		{`{"counter":"__x__","delta":0}`, "application/json", ""},
		{`{"counter":"a","delta":1e3}`, "application/json", ""},
		{`{"counter":"a"}{"counter":"b"}`, "application/json", ""},
		{"{\"counter\":\"caf\xe9\"}", "application/json", ""},
		{`{"counter":"a","delta":99999999999999999999}`, "text/plain", ""},
		{`{"counter":"a"}`, "application/json", "\xff"},
	} {
		f.Add([]byte(seed.body), seed.contentType, seed.key)
	}
	z := newFuzzed(f)
	f.Fuzz(func(t *testing.T, body []byte, contentType, key string) {
		r := httptest.NewRequest(http.MethodPost, "/Increment", bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		if key != "" {
			r.Header.Set(wire.HeaderIdempotencyKey, key)
		}
		z.serve(t, z.svc.Increment, r, refusedWith4xx(t))
	})
}

func FuzzConfigureCounter(f *testing.F) {
	for _, seed := range []struct {
		method      uint8
		body, query string
	}{
		{0, `{"counter":"views","num_shards":5}`, ""},
		{1, `{"counter":"views","min_shards":2,"max_shards":9}`, ""},
		{1, `{"counter":"views","reset":true}`, ""},
		{2, ``, "counter=views"},
		{0, `{"counter":"a","num_shards":1001}`, ""},
		{0, `{"counter":"a","min_shards":9,"max_shards":3}`, ""},
		{1, `{"counter":"a","reset":true,"num_shards":3}`, ""},
		{2, ``, "counter=%FF"},
	} {
		f.Add(seed.method, []byte(seed.body), seed.query)
	}
	z := newFuzzed(f)
	methods := []string{http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodGet}
	f.Fuzz(func(t *testing.T, method uint8, body []byte, query string) {
		r := httptest.NewRequest(methods[int(method)%len(methods)], "/ConfigureCounter", bytes.NewReader(body))
		r.URL.RawQuery = query
		r.Header.Set("Content-Type", "application/json")
		z.serve(t, z.svc.ConfigureCounter, r, refusedWith4xx(t))
	})
}

func FuzzCount(f *testing.F) {
	for _, q := range []string{"counter=likes", "", "counter=a&counter=b", "counter=%FF", "counter=a%2Fb", "counter=__x__", "counter=%zz"} {
		f.Add(q)
	}
	z := newFuzzed(f)
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest(http.MethodGet, "/Count", nil)
		r.URL.RawQuery = query
		z.serve(t, z.svc.Count, r, refusedWith4xx(t))
	})
}

// pushEnvelope is a Pub/Sub push body carrying data, with key as its idempotency_key when set.
func pushEnvelope(data []byte, key, messageID string) []byte {
	attrs := map[string]string{}
	if key != "" {
		attrs[wire.AttributeIdempotencyKey] = key
	}
	body, _ := json.Marshal(map[string]any{
		"message":      map[string]any{"data": base64.StdEncoding.EncodeToString(data), "attributes": attrs, "messageId": messageID},
		"subscription": "projects/p/subscriptions/s",
	})
	return body
}

func FuzzIncrementFromPubSub(f *testing.F) {
	for _, seed := range []struct {
		data, key string
		raw       []byte
	}{
		{`{"counter":"likes","delta":2}`, "", nil},
		{`{"increments":[{"counter":"a","delta":3},{"counter":"b"}]}`, "batch-1", nil},
		{`{"increments":[]}`, "", nil},
		{`{"counter":"a","increments":[{"counter":"b"}]}`, "", nil},
		{`{"counter":"a/b"}`, "", nil},
		{`not json`, "", nil},
		{`{"counter":"a"}`, "\xff", nil},
		{"", "", []byte(`{"message":{"data":"!!","messageId":"1"}}`)},
		{"", "", []byte(`{"message":{"messageId":""}}`)},
		{"", "", []byte(`[]`)},
	} {
		f.Add([]byte(seed.data), seed.key, seed.raw)
	}
	z := newFuzzed(f)
	handler := func(w http.ResponseWriter, r *http.Request) { cloudEvent((*Service).IncrementFromPubSub)(z.svc, w, r) }
	id := 0
	f.Fuzz(func(t *testing.T, data []byte, key string, raw []byte) {
		id++
		body := raw
		if raw == nil {
			body = pushEnvelope(data, key, "m-"+strings.Repeat("x", id%3)+string(rune('a'+id%26)))
		}
		r := httptest.NewRequest(http.MethodPost, "/projects/p/topics/"+shared.TopicIncrements, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		z.serve(t, handler, r, z.refusedAsPoison)
	})
}

// FuzzRollupOnShardWrite delivers Firestore events, binary or structured, for a project without
// counters: whatever the event, it is acknowledged and nothing is written.
func FuzzRollupOnShardWrite(f *testing.F) {
	for _, seed := range []struct {
		structured    bool
		subject, body string
	}{
		{false, "documents/counters/likes/shards/3", ""},
		{false, "documents/counters/likes", "\x0a\x02\x08\x01"},
		{false, "documents/other/x/shards/1", "garbage"},
		{true, "", `{"specversion":"1.0","id":"1","source":"s","type":"google.cloud.firestore.document.v1.written","subject":"documents/counters/a/shards/0"}`},
		{true, "", `{"specversion":"0.3"}`},
		{true, "", `not json`},
	} {
		f.Add(seed.structured, seed.subject, []byte(seed.body))
	}
	z := newFuzzed(f)
	handler := func(w http.ResponseWriter, r *http.Request) { cloudEvent((*Service).RollupOnShardWrite)(z.svc, w, r) }
	f.Fuzz(func(t *testing.T, structured bool, subject string, body []byte) {
		z.serve(t, handler, firestoreEventRequest("/RollupOnShardWrite", structured, subject, body), func(*httptest.ResponseRecorder) bool { return true })
	})
}

// FuzzFoldExtensionShards delivers Firestore events, binary or structured, for a project without
// shards: whatever the event, it is acknowledged and nothing is written.
func FuzzFoldExtensionShards(f *testing.F) {
	for _, seed := range []struct {
		structured    bool
		subject, body string
	}{
		{false, "documents/posts/p1/_counter_shards_/u1", ""},
		{false, "documents/posts/p1/_counter_shards_/u1", "\x0a\x0a\x2a\x08\x0a\x01\x61\x12\x03\x10\x01"},
		{false, "documents/a//_counter_shards_/x", "garbage"},
		{false, "documents/posts/p1", ""},
		{true, "", `{"specversion":"1.0","id":"1","source":"s","type":"google.cloud.firestore.document.v1.written","subject":"documents/a/b/_counter_shards_/c"}`},
		{true, "", `not json`},
	} {
		f.Add(seed.structured, seed.subject, []byte(seed.body))
	}
	z := newFuzzed(f)
	handler := func(w http.ResponseWriter, r *http.Request) { cloudEvent((*Service).FoldExtensionShards)(z.svc, w, r) }
	f.Fuzz(func(t *testing.T, structured bool, subject string, body []byte) {
		z.serve(t, handler, firestoreEventRequest("/FoldExtensionShards", structured, subject, body), func(*httptest.ResponseRecorder) bool { return true })
	})
}

// firestoreEventRequest is a delivery of a Firestore document event to path: a structured
// CloudEvent with body, or a binary one (Eventarc's) with subject and body as its data.
func firestoreEventRequest(path string, structured bool, subject string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	if structured {
		r.Header.Set("Content-Type", "application/cloudevents+json")
		return r
	}
	r.Header.Set("Content-Type", "application/protobuf")
	r.Header.Set("Ce-Specversion", "1.0")
	r.Header.Set("Ce-Id", "e-1")
	r.Header.Set("Ce-Type", eventhttp.EventFirestoreDocWritten)
	r.Header.Set("Ce-Source", "//firestore.googleapis.com/projects/p/databases/(default)")
	r.Header.Set("Ce-Subject", subject)
	return r
}

// FuzzCountDocumentWrite delivers Firestore events, binary or structured, to a Service counting the
// likes of posts: whatever the event (not a document, a body that is no DocumentEventData, a path
// no declaration matches), it is answered below 500, and what is not a like writes nothing.
func FuzzCountDocumentWrite(f *testing.F) {
	for _, seed := range []struct {
		structured    bool
		subject, body string
	}{
		{false, "documents/comments/c1", "\x0a\x0a\x2a\x08\x0a\x01\x61\x12\x03\x10\x01"},
		{false, "documents/posts/p1/likes", "garbage"},
		{false, "documents/", ""},
		{false, "documents/posts/p1/likes/u1/x/y", "\x12\x00"},
		{true, "", `{"specversion":"1.0","id":"1","source":"s","type":"google.cloud.firestore.document.v1.written","subject":"documents/posts/p/likes/u"}`},
		{true, "", `not json`},
	} {
		f.Add(seed.structured, seed.subject, []byte(seed.body))
	}
	z := newFuzzed(f)
	set, err := sources.Parse([]byte(`[{"documents": "posts/{post}/likes/{uid}", "counter": "likes-{post}"}]`), z.svc.rollups.cfg.Schema())
	if err != nil {
		f.Fatal(err)
	}
	z.svc.CountSources(set)
	handler := func(w http.ResponseWriter, r *http.Request) { cloudEvent((*Service).CountDocumentWrite)(z.svc, w, r) }
	f.Fuzz(func(t *testing.T, structured bool, subject string, body []byte) {
		segs := strings.Split(strings.TrimPrefix(subject, "documents/"), "/")
		like := !structured && len(segs) == 4 && segs[0] == "posts" && segs[2] == "likes"
		z.serve(t, handler, firestoreEventRequest("/CountDocumentWrite", structured, subject, body), func(*httptest.ResponseRecorder) bool { return !like })
	})
}
