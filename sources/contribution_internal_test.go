package sources

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/counters/shared"
)

func integer(n int64) *firestorepb.Value {
	return &firestorepb.Value{ValueType: &firestorepb.Value_IntegerValue{IntegerValue: n}}
}

func double(f float64) *firestorepb.Value {
	return &firestorepb.Value{ValueType: &firestorepb.Value_DoubleValue{DoubleValue: f}}
}

func str(s string) *firestorepb.Value {
	return &firestorepb.Value{ValueType: &firestorepb.Value_StringValue{StringValue: s}}
}

// TestContributionFollowsFirestoresEqualityAndSum: where compares numbers by value (1 == 1.0), a
// missing field equals nothing, and a sum adds integers only (anything else counts 0).
func TestContributionFollowsFirestoresEqualityAndSum(t *testing.T) {
	set, err := Parse([]byte(`[{"documents": "a/{x}", "counter": "n", "where": {"level": 1, "kind": "x"}},
	  {"documents": "b/{x}", "counter": "m", "sum": "totals.amount"}]`), shared.Schema{Counters: "counters"})
	if err != nil {
		t.Fatal(err)
	}
	c := &Counting{set: set, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	count, sum := set.Declarations[0], set.Declarations[1]
	doc := func(fields map[string]*firestorepb.Value) *firestorepb.Document {
		return &firestorepb.Document{Fields: fields}
	}
	nested := func(v *firestorepb.Value) map[string]*firestorepb.Value {
		return map[string]*firestorepb.Value{"totals": {ValueType: &firestorepb.Value_MapValue{MapValue: &firestorepb.MapValue{Fields: map[string]*firestorepb.Value{"amount": v}}}}}
	}
	for _, tc := range []struct {
		name string
		d    *Declaration
		doc  *firestorepb.Document
		want int64
	}{
		{"no document", count, nil, 0},
		{"integer equals", count, doc(map[string]*firestorepb.Value{"level": integer(1), "kind": str("x")}), 1},
		{"double equals integer", count, doc(map[string]*firestorepb.Value{"level": double(1), "kind": str("x")}), 1},
		{"other value", count, doc(map[string]*firestorepb.Value{"level": integer(2), "kind": str("x")}), 0},
		{"missing field", count, doc(map[string]*firestorepb.Value{"level": integer(1)}), 0},
		{"integer summed", sum, doc(nested(integer(42))), 42},
		{"double counts 0", sum, doc(nested(double(4.5))), 0},
		{"string counts 0", sum, doc(nested(str("12"))), 0},
		{"missing counts 0", sum, doc(nil), 0},
	} {
		if got := c.contribution(context.Background(), tc.d, "a/1", tc.doc); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
