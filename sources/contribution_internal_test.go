package sources

import (
	"context"
	"io"
	"log/slog"
	"math"
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
	  {"documents": "b/{x}", "counter": "m", "sum": "totals.amount"},
	  {"documents": "c/{x}", "counter": "c", "where": {"n": 9007199254740992.0}},
	  {"documents": "d/{x}", "counter": "d", "where": {"n": 9007199254740993}},
	  {"documents": "e/{x}", "counter": "e", "where": {"n": 9223372036854775807}},
	  {"documents": "f/{x}", "counter": "f", "sum": "totals.amount", "scale": 2}]`), shared.Schema{Counters: "counters"})
	if err != nil {
		t.Fatal(err)
	}
	c := &Counting{set: set, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	count, sum, big, bigInt, maxInt, cents := set.Declarations[0], set.Declarations[1], set.Declarations[2], set.Declarations[3], set.Declarations[4], set.Declarations[5]
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
		{"integer past 2^53 is not the nearest double", big, doc(map[string]*firestorepb.Value{"n": integer(1<<53 + 1)}), 0},
		{"integer 2^53 is the double", big, doc(map[string]*firestorepb.Value{"n": integer(1 << 53)}), 1},
		{"double is not the integer past 2^53", bigInt, doc(map[string]*firestorepb.Value{"n": double(1 << 53)}), 0},
		{"double 2^63 is no integer", maxInt, doc(map[string]*firestorepb.Value{"n": double(1 << 63)}), 0},
		{"cents of a double", cents, doc(nested(double(12.5))), 1250},
		{"cents of 0.1", cents, doc(nested(double(0.1))), 10},
		{"cents of an integer", cents, doc(nested(integer(3))), 300},
		{"three decimals count 0", cents, doc(nested(double(1.005))), 0},
		{"cents past int64 count 0", cents, doc(nested(integer(1 << 62))), 0},
		{"negative cents", cents, doc(nested(double(-0.25))), -25},
		{"missing field", count, doc(map[string]*firestorepb.Value{"level": integer(1)}), 0},
		{"integer summed", sum, doc(nested(integer(42))), 42},
		{"the largest integer", sum, doc(nested(integer(math.MaxInt64))), math.MaxInt64},
		{"the smallest integer counts 0: its removal would leave int64", sum, doc(nested(integer(math.MinInt64))), 0},
		{"double counts 0", sum, doc(nested(double(4.5))), 0},
		{"string counts 0", sum, doc(nested(str("12"))), 0},
		{"missing counts 0", sum, doc(nil), 0},
	} {
		if got := c.contribution(context.Background(), tc.d, "a/1", tc.doc); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
