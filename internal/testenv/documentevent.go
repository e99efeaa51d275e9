package testenv

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/counters/functions/eventhttp"
)

// DocumentEventData encodes Eventarc's protobuf DocumentEventData with value and oldValue; nil
// leaves one out.
func DocumentEventData(t testing.TB, value, oldValue *firestorepb.Document) []byte {
	t.Helper()
	b, err := eventhttp.DocumentEventData(value, oldValue, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// DocumentWritten is Eventarc's binary-mode request for a write of path (from the database root)
// committed at at.
func DocumentWritten(t testing.TB, path string, at time.Time, value, oldValue *firestorepb.Document) *http.Request {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(DocumentEventData(t, value, oldValue)))
	for k, v := range map[string]string{"Content-Type": "application/protobuf", "Ce-Specversion": "1.0", "Ce-Id": UniqueID("event"),
		"Ce-Type": eventhttp.EventFirestoreDocWritten, "Ce-Source": "//firestore.googleapis.com/projects/p/databases/(default)",
		"Ce-Subject": "documents/" + path, "Ce-Time": at.Format(time.RFC3339Nano)} {
		req.Header.Set(k, v)
	}
	return req
}

// ExtensionShardID is a shard ID of the firestore-counter extension's form (a client's UUID).
const ExtensionShardID = "0d3f2b4e-8a1c-4b7e-9f00-123456789abc"
