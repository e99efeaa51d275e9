package testenv

import (
	"testing"

	"cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/counters/functions/eventhttp"
)

// DocumentEventData encodes the protobuf DocumentEventData of a Firestore document event, as
// Eventarc sends it, with the given value (after the write) and old_value documents; nil leaves one
// out.
func DocumentEventData(t testing.TB, value, oldValue *firestorepb.Document) []byte {
	t.Helper()
	b, err := eventhttp.DocumentEventData(value, oldValue, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
