package eventhttp

import (
	"errors"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// encode is DocumentEventData without an update mask, failing t on an error.
func encode(t *testing.T, value, oldValue *firestorepb.Document) []byte {
	t.Helper()
	b, err := DocumentEventData(value, oldValue, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWrittenDocumentUpdateTime(t *testing.T) {
	written := time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)
	doc := func(at time.Time) *firestorepb.Document {
		return &firestorepb.Document{
			Name:       "projects/p/databases/(default)/documents/counters/c/shards/1",
			Fields:     map[string]*firestorepb.Value{"count": {ValueType: &firestorepb.Value_IntegerValue{IntegerValue: 3}}},
			UpdateTime: timestamppb.New(at),
		}
	}
	cases := []struct {
		name   string
		data   []byte
		want   time.Time
		wantOK bool
		bad    bool
	}{
		{"create", encode(t, doc(written), nil), written, true, false},
		{"update", encode(t, doc(written), doc(written.Add(-time.Second))), written, true, false},
		{"delete has no value", encode(t, nil, doc(written)), time.Time{}, false, false},
		{"empty body", nil, time.Time{}, false, false},
		{"garbage", []byte{0x0a, 0xff}, time.Time{}, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := WrittenDocumentUpdateTime(c.data)
			if (err != nil) != c.bad || ok != c.wantOK || !got.Equal(c.want) {
				t.Errorf("got %v, %v, %v; want %v, %v, error %v", got, ok, err, c.want, c.wantOK, c.bad)
			}
		})
	}
}

// TestDocumentEventDataFields checks the encoding field by field against DocumentEventData's schema
// (value 1, old_value 2, update_mask 3, each a message), and that a delete carries no value.
func TestDocumentEventDataFields(t *testing.T) {
	doc := func(n int64) *firestorepb.Document {
		return &firestorepb.Document{
			Name:   "projects/p/databases/(default)/documents/counters/c/shards/1",
			Fields: map[string]*firestorepb.Value{"count": {ValueType: &firestorepb.Value_IntegerValue{IntegerValue: n}}},
		}
	}
	fields := func(data []byte) map[protowire.Number][]byte {
		got := map[protowire.Number][]byte{}
		for len(data) > 0 {
			num, typ, n := protowire.ConsumeTag(data)
			if n < 0 || typ != protowire.BytesType {
				t.Fatalf("field %d: type %v, tag length %d", num, typ, n)
			}
			v, m := protowire.ConsumeBytes(data[n:])
			if m < 0 {
				t.Fatalf("field %d: %v", num, protowire.ParseError(m))
			}
			got[num], data = v, data[n+m:]
		}
		return got
	}
	update, err := DocumentEventData(doc(2), doc(1), []string{"count"})
	if err != nil {
		t.Fatal(err)
	}
	f := fields(update)
	var value, old firestorepb.Document
	var mask firestorepb.DocumentMask
	if err := errors.Join(proto.Unmarshal(f[1], &value), proto.Unmarshal(f[2], &old), proto.Unmarshal(f[3], &mask)); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&value, doc(2)) || !proto.Equal(&old, doc(1)) || len(mask.FieldPaths) != 1 || mask.FieldPaths[0] != "count" {
		t.Errorf("update decodes to value %v, old_value %v, update_mask %v", &value, &old, &mask)
	}
	del, err := DocumentEventData(nil, doc(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := fields(del); f[1] != nil || f[2] == nil || f[3] != nil {
		t.Errorf("delete has fields %v; want old_value only", f)
	}
}
