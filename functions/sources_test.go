package functions_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/sources"
)

// TestCountDocumentWriteCountsEachWriteOnceAndRefusesIncrements: the binary-mode event Eventarc
// sends for a like, delivered three times, counts once; Increment on the collection counter is
// refused with 409 and writes nothing.
func TestCountDocumentWriteCountsEachWriteOnceAndRefusesIncrements(t *testing.T) {
	srv := newTestServer(t, config.Default())
	set, err := sources.Parse([]byte(`[{"documents": "posts/{post}/likes/{uid}", "counter": "likes-{post}"}]`), config.Default().Schema())
	if err != nil {
		t.Fatal(err)
	}
	srv.svc.CountSources(set)
	ctx := context.Background()
	// A document written before the first event is in the counter's base.
	if _, err := srv.client.Doc("posts/p1/likes/u0").Set(ctx, map[string]any{"at": 1}); err != nil {
		t.Fatal(err)
	}
	res, err := srv.client.Doc("posts/p1/likes/u1").Set(ctx, map[string]any{"at": 2})
	if err != nil {
		t.Fatal(err)
	}
	handler, _ := srv.svc.EntryPoint(functions.EntryCountDocumentWrite)
	value := &firestorepb.Document{Name: "projects/p/databases/(default)/documents/posts/p1/likes/u1", UpdateTime: timestamppb.New(res.UpdateTime), CreateTime: timestamppb.New(res.UpdateTime)}
	for range 3 {
		req := testenv.DocumentWritten(t, "posts/p1/likes/u1", res.UpdateTime, value, nil)
		rec := httptest.NewRecorder()
		handler(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusNoContent {
			t.Fatalf("event answered %d %s", rec.Code, rec.Body)
		}
	}
	if a := srv.do(t, http.MethodGet, "/Count?counter=likes-p1", "", nil); a.status != http.StatusOK || a.body["count"] != float64(2) {
		t.Fatalf("Count after the event three times: %d %v, want 2 (the base's like and the event's)", a.status, a.body)
	}
	a := srv.do(t, http.MethodPost, "/Increment", "application/json", []byte(`{"counter": "likes-p1", "delta": 5}`))
	if a.status != http.StatusConflict || a.body["field"] != "counter" {
		t.Errorf("Increment of a collection counter: %d %v, want 409 naming the counter", a.status, a.body)
	}
	if a := srv.do(t, http.MethodGet, "/Count?counter=likes-p1", "", nil); a.body["count"] != float64(2) {
		t.Errorf("Count after the refused increment: %v, want 2", a.body)
	}

	// An ID the declaration builds is its documents' alone, before its first document too; every
	// refusal names what applies to it (its documents, backfill), never ConfigureCounter or increments.
	for _, c := range []struct {
		method, path, body string
		status             int
		names              string
	}{
		{http.MethodPost, "/Increment", `{"counter": "likes-p9"}`, http.StatusConflict, "its documents"},
		{http.MethodPut, "/ConfigureCounter", `{"counter": "likes-p9", "num_shards": 3}`, http.StatusConflict, "backfill"},
		{http.MethodGet, "/Count?counter=likes-p9", "", http.StatusNotFound, "backfill"},
		{http.MethodGet, "/Count?counter=likes-p9&window=day", "", http.StatusNotFound, "backfill"},
		{http.MethodPost, "/ConfigureCounter", `{"counter": "likes-p9", "reset": true}`, http.StatusNotFound, "backfill"},
		{http.MethodDelete, "/ConfigureCounter?counter=likes-p9", "", http.StatusNotFound, "backfill"},
	} {
		contentType := ""
		if c.body != "" {
			contentType = "application/json"
		}
		a := srv.do(t, c.method, c.path, contentType, []byte(c.body))
		msg := fmt.Sprint(a.body["error"])
		if a.status != c.status || !strings.Contains(msg, c.names) || strings.Contains(msg, "incrementing") || strings.Contains(msg, "create it with") {
			t.Errorf("%s %s %s of a declared ID no document made yet: %d %v, want %d naming %q", c.method, c.path, c.body, a.status, a.body, c.status, c.names)
		}
	}

	// Every ConfigureCounter action keeps it equal to its documents or is refused with 409.
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"counter": "likes-p1", "reset": true}`, http.StatusConflict},
		{`{"counter": "likes-p1", "distinct": true}`, http.StatusConflict},
		{`{"counter": "likes-p1", "windows": ["day"]}`, http.StatusConflict},
		{`{"counter": "likes-p1", "group": "posts"}`, http.StatusConflict},
		{`{"counter": "likes-p1", "num_shards": 7}`, http.StatusOK},
		{`{"counter": "likes-p1", "min_shards": 2, "max_shards": 50}`, http.StatusOK},
	} {
		a := srv.do(t, http.MethodPost, "/ConfigureCounter", "application/json", []byte(c.body))
		if a.status != c.status || c.status == http.StatusConflict && a.body["field"] != "counter" {
			t.Errorf("ConfigureCounter %s: %d %v, want %d", c.body, a.status, a.body, c.status)
		}
		if a := srv.do(t, http.MethodGet, "/Count?counter=likes-p1", "", nil); a.body["count"] != float64(2) {
			t.Errorf("Count after ConfigureCounter %s: %v, want 2", c.body, a.body)
		}
	}
	// Deleted, it is based again on its documents by the next event.
	if a := srv.do(t, http.MethodDelete, "/ConfigureCounter?counter=likes-p1", "", nil); a.status != http.StatusOK {
		t.Fatalf("delete: %d %v", a.status, a.body)
	}
	res, err = srv.client.Doc("posts/p1/likes/u2").Set(ctx, map[string]any{"at": 3})
	if err != nil {
		t.Fatal(err)
	}
	value = &firestorepb.Document{Name: "projects/p/databases/(default)/documents/posts/p1/likes/u2", UpdateTime: timestamppb.New(res.UpdateTime), CreateTime: timestamppb.New(res.UpdateTime)}
	rec := httptest.NewRecorder()
	handler(rec, testenv.DocumentWritten(t, "posts/p1/likes/u2", res.UpdateTime, value, nil))
	if a := srv.do(t, http.MethodGet, "/Count?counter=likes-p1", "", nil); rec.Code/100 != 2 || a.body["count"] != float64(3) {
		t.Errorf("after a delete and a like: event %d, Count %v, want 3", rec.Code, a.body)
	}
}
