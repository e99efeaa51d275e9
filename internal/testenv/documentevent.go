package testenv

import (
	"testing"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// DocumentEventData encodes the protobuf DocumentEventData of a Firestore document event, as
// Eventarc sends it, with the given value (after the write) and old_value documents; nil leaves one
// out.
func DocumentEventData(t testing.TB, value, oldValue *firestorepb.Document) []byte {
	t.Helper()
	var b []byte
	for num, doc := range map[protowire.Number]*firestorepb.Document{1: value, 2: oldValue} {
		if doc == nil {
			continue
		}
		enc, err := proto.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendBytes(b, enc)
	}
	return b
}
