package eventhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions/eventhttp"
)

// received is what a test function saw.
type received struct {
	calls int
	event event.Event
}

// serve sends req to a Handler whose function returns result, and returns the answer, what the
// function received and the logs.
func serve(t *testing.T, req *http.Request, result error) (*httptest.ResponseRecorder, *received, string) {
	t.Helper()
	var got received
	var logs bytes.Buffer
	h := eventhttp.Handler(func(_ context.Context, e event.Event) error {
		got.calls++
		got.event = e
		return result
	}, slog.New(slog.NewJSONHandler(&logs, nil)))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w, &got, logs.String()
}

func post(path string, header map[string]string, body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return req
}

// TestWireFormats decodes each way production and the local stack deliver events.
func TestWireFormats(t *testing.T) {
	firestoreData := []byte{0x0a, 0x02, 0x08, 0x01} // any protobuf bytes: passed through untouched
	tests := []struct {
		name        string
		req         *http.Request
		wantID      string
		wantType    string
		wantSource  string
		wantSubject string
		wantCT      string
		wantData    []byte
	}{
		{
			name: "Eventarc Firestore event, binary mode, protobuf",
			req: post("/", map[string]string{
				"Content-Type":   "application/protobuf",
				"Ce-Specversion": "1.0", "Ce-Id": "fs-1", "Ce-Type": "google.cloud.firestore.document.v1.written",
				"Ce-Source":  "//firestore.googleapis.com/projects/p/databases/(default)",
				"Ce-Subject": "documents/counters/likes/shards/3", "Ce-Time": "2026-11-21T06:00:00Z",
				"Ce-Dataschema": "https://github.com/googleapis/google-cloudevents/blob/main/proto/google/events/cloud/firestore/v1/data.proto",
				"Ce-Location":   "nam5", "Ce-Project": "p", "Ce-Database": "(default)", "Ce-Namespace": "(default)",
				"Ce-Document": "counters/likes/shards/3",
			}, string(firestoreData)),
			wantID: "fs-1", wantType: "google.cloud.firestore.document.v1.written",
			wantSource: "//firestore.googleapis.com/projects/p/databases/(default)", wantSubject: "documents/counters/likes/shards/3",
			wantCT: "application/protobuf", wantData: firestoreData,
		},
		{
			name: "Eventarc Pub/Sub event, binary mode, JSON",
			req: post("/", map[string]string{
				"Content-Type":   "application/json",
				"Ce-Specversion": "1.0", "Ce-Id": "ps-1", "Ce-Type": eventhttp.EventPubSubMessagePublished,
				"Ce-Source": "//pubsub.googleapis.com/projects/p/topics/t",
			}, `{"message":{"data":"e30=","messageId":"ps-1"},"subscription":"projects/p/subscriptions/s"}`),
			wantID: "ps-1", wantType: eventhttp.EventPubSubMessagePublished, wantSource: "//pubsub.googleapis.com/projects/p/topics/t",
			wantCT: "application/json", wantData: []byte(`{"message":{"data":"e30=","messageId":"ps-1"},"subscription":"projects/p/subscriptions/s"}`),
		},
		{
			name: "structured mode",
			req: post("/", map[string]string{"Content-Type": "application/cloudevents+json"},
				`{"specversion":"1.0","id":"st-1","type":"t.x","source":"//s","subject":"documents/counters/a/shards/0","datacontenttype":"application/json","data":{"a":1}}`),
			wantID: "st-1", wantType: "t.x", wantSource: "//s", wantSubject: "documents/counters/a/shards/0",
			wantCT: "application/json", wantData: []byte(`{"a":1}`),
		},
		{
			name: "Pub/Sub push envelope, topic in the path",
			req: post("/IncrementFromPubSub/projects/p/topics/counter-increments", map[string]string{"Content-Type": "application/json"},
				`{"message":{"data":"e30=","attributes":{"k":"v"},"messageId":"42","publishTime":"2026-11-21T06:00:00.5Z"},"subscription":"projects/p/subscriptions/s"}`),
			wantID: "42", wantType: eventhttp.EventPubSubMessagePublished, wantSource: "//pubsub.googleapis.com/projects/p/topics/counter-increments",
			wantCT:   "application/json",
			wantData: []byte(`{"message":{"data":"e30=","attributes":{"k":"v"},"messageId":"42","publishTime":"2026-11-21T06:00:00.5Z"},"subscription":"projects/p/subscriptions/s"}`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, got, logs := serve(t, tt.req, nil)
			if w.Code != http.StatusOK || got.calls != 1 {
				t.Fatalf("answer %d, function called %d times (logs %s), want 200 and once", w.Code, got.calls, logs)
			}
			e := got.event
			if e.ID() != tt.wantID || e.Type() != tt.wantType || e.Source() != tt.wantSource || e.Subject() != tt.wantSubject {
				t.Errorf("event id=%q type=%q source=%q subject=%q, want %q %q %q %q",
					e.ID(), e.Type(), e.Source(), e.Subject(), tt.wantID, tt.wantType, tt.wantSource, tt.wantSubject)
			}
			if e.DataContentType() != tt.wantCT || !bytes.Equal(e.Data(), tt.wantData) {
				t.Errorf("data %q (%s), want %q (%s)", e.Data(), e.DataContentType(), tt.wantData, tt.wantCT)
			}
		})
	}
}

// TestPushEnvelopeKeepsTheMessage checks the envelope's message reaches the function as the
// messagePublished data Eventarc sends: base64 data, attributes, message ID, publish time.
func TestPushEnvelopeKeepsTheMessage(t *testing.T) {
	req := post("/f/projects/p/topics/t", map[string]string{"Content-Type": "application/json"},
		`{"message":{"data":"eyJjb3VudGVyIjoibGlrZXMifQ==","attributes":{"idempotency_key":"k1"},"messageId":"7","publishTime":"2026-11-21T06:00:00Z"},"subscription":"projects/p/subscriptions/s"}`)
	_, got, _ := serve(t, req, nil)
	var data map[string]any
	if err := got.event.DataAs(&data); err != nil {
		t.Fatal(err)
	}
	msg, _ := data["message"].(map[string]any)
	attrs, _ := msg["attributes"].(map[string]any)
	if msg["data"] != "eyJjb3VudGVyIjoibGlrZXMifQ==" || attrs["idempotency_key"] != "k1" || msg["messageId"] != "7" ||
		data["subscription"] != "projects/p/subscriptions/s" {
		t.Errorf("event data %v, want the envelope's message and subscription", data)
	}
	if want := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC); !got.event.Time().Equal(want) {
		t.Errorf("event time %s, want the publish time %s", got.event.Time(), want)
	}
}

// TestAnswers checks the CloudEvent answer semantics: 2xx acknowledges, 5xx asks for redelivery, a
// delivery that can never be handled is acknowledged and logged at ERROR without calling the function.
func TestAnswers(t *testing.T) {
	binary := func() *http.Request {
		return post("/", map[string]string{"Content-Type": "application/json", "Ce-Specversion": "1.0", "Ce-Id": "1", "Ce-Type": "t", "Ce-Source": "//s"}, `{}`)
	}
	t.Run("function fails: 500, redelivered", func(t *testing.T) {
		if w, got, _ := serve(t, binary(), errors.New("transient")); w.Code != http.StatusInternalServerError || got.calls != 1 {
			t.Errorf("answer %d after %d calls, want 500 after 1", w.Code, got.calls)
		}
	})
	t.Run("function succeeds: 200", func(t *testing.T) {
		if w, _, _ := serve(t, binary(), nil); w.Code != http.StatusOK {
			t.Errorf("answer %d, want 200", w.Code)
		}
	})
	poison := map[string]*http.Request{
		"not JSON, no ce headers":        post("/f/projects/p/topics/t", map[string]string{"Content-Type": "text/plain"}, "hello"),
		"JSON without a message":         post("/f/projects/p/topics/t", map[string]string{"Content-Type": "application/json"}, `{"x":1}`),
		"envelope without topic in path": post("/f", map[string]string{"Content-Type": "application/json"}, `{"message":{"messageId":"1"}}`),
		"envelope without message ID":    post("/f/projects/p/topics/t", map[string]string{"Content-Type": "application/json"}, `{"message":{"data":"e30="}}`),
		"binary mode without ce-type":    post("/", map[string]string{"Content-Type": "application/json", "Ce-Specversion": "1.0", "Ce-Id": "1", "Ce-Source": "//s"}, `{}`),
		"structured mode, bad JSON":      post("/", map[string]string{"Content-Type": "application/cloudevents+json"}, `{"specversion":`),
		"over the size limit":            post("/f/projects/p/topics/t", map[string]string{"Content-Type": "application/json"}, strings.Repeat(" ", eventhttp.MaxBodyBytes+1)),
	}
	for name, req := range poison {
		t.Run("poison: "+name, func(t *testing.T) {
			w, got, logs := serve(t, req, nil)
			if w.Code != http.StatusOK || got.calls != 0 {
				t.Errorf("answer %d after %d calls, want 200 (acknowledged) without calling the function", w.Code, got.calls)
			}
			var entry map[string]any
			if err := json.Unmarshal([]byte(logs), &entry); err != nil || entry["level"] != "ERROR" {
				t.Errorf("log %q, want one ERROR entry", logs)
			}
		})
	}
	t.Run("GET: 405", func(t *testing.T) {
		w, got, _ := serve(t, httptest.NewRequest(http.MethodGet, "/", nil), nil)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodPost || got.calls != 0 {
			t.Errorf("answer %d Allow %q after %d calls, want 405 POST without calling the function", w.Code, w.Header().Get("Allow"), got.calls)
		}
	})
}
