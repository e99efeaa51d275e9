package eventhttp

import (
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/counters/internal/testenv"
)

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
		{"create", testenv.DocumentEventData(t, doc(written), nil), written, true, false},
		{"update", testenv.DocumentEventData(t, doc(written), doc(written.Add(-time.Second))), written, true, false},
		{"delete has no value", testenv.DocumentEventData(t, nil, doc(written)), time.Time{}, false, false},
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
