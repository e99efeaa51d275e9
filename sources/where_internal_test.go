package sources

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/counters/internal/testenv"
)

// everyType is a value of each type Firestore orders, and the edges of numbers and strings.
var everyType = []any{nil, false, true, int64(0), int64(1), int64(5), int64(100), int64(-3), 1.0, 1.5, 99.5,
	math.NaN(), math.Inf(1), math.Inf(-1), int64(math.MaxInt64), float64(1 << 53), int64(1<<53 + 1),
	"", "a", "b", "Z", "paid", "shipped", "é", time.Unix(1700000000, 0), []byte("a"),
	[]any{}, []any{int64(1)}, []any{"a", int64(1)}, []any{"paid"}, []any{nil}, []any{1.0, "shipped"},
	map[string]any{"k": int64(1)}, map[string]any{"k": "a"}, map[string]any{}}

// TestWhereMatchesWhatFirestoresQueryMatches: for each operator, over documents holding a value of
// every type (and none), the documents a filter matches number what the emulator's count() with
// that filter counts.
func TestWhereMatchesWhatFirestoresQueryMatches(t *testing.T) {
	client := testenv.Firestore(t)
	ctx := context.Background()
	coll := client.Collection("orders")
	var docs []map[string]*firestorepb.Value
	for i, v := range append(everyType, "missing") {
		data := map[string]any{"v": v, "m": map[string]any{"k": v}}
		if v == "missing" {
			data = map[string]any{"other": int64(1)}
		}
		if _, err := coll.Doc(fmt.Sprintf("d%02d", i)).Set(ctx, data); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, map[string]*firestorepb.Value{})
		for k, x := range data {
			docs[i][k] = protoValue(x)
		}
	}
	for _, where := range []string{
		`[["v", "==", 1]]`, `[["v", "==", 1.0]]`, `[["v", "==", "a"]]`, `[["v", "==", null]]`, `[["v", "==", true]]`, `{"v": 9007199254740992}`,
		`[["v", "!=", 1]]`, `[["v", "!=", "a"]]`, `[["v", "!=", null]]`, `[["v", "!=", false]]`,
		`[["v", "<", 5]]`, `[["v", "<=", 1]]`, `[["v", ">", 1]]`, `[["v", ">=", 1.5]]`, `[["v", "<", 0]]`, `[["v", ">", -1e308]]`,
		`[["v", "<", "b"]]`, `[["v", ">", "a"]]`, `[["v", ">=", ""]]`,
		`[["v", "in", [1, "a"]]]`, `[["v", "in", [true, 1.5]]]`, `[["v", "not-in", [1, "a"]]]`, `[["v", "not-in", [false]]]`,
		`[["v", "array-contains", 1]]`, `[["v", "array-contains", "a"]]`,
		`[["v", "array-contains-any", [1, "paid"]]]`,
		`[["m.k", "==", 1]]`, `[["m.k", ">", 0]]`, `[["v", ">", 0], ["m.k", "<", 100]]`, `[["v", "!=", 1], ["m.k", ">", 0]]`,
	} {
		var w Where
		if err := w.UnmarshalJSON([]byte(where)); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if err := w.check(); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		q := w.query(coll.Query)
		res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
		if err != nil {
			t.Errorf("%s: the emulator's count(): %v", where, err)
			continue
		}
		want := res["n"].(*firestorepb.Value).GetIntegerValue()
		got := int64(0)
		for _, d := range docs {
			if w.matches(d) {
				got++
			}
		}
		if got != want {
			t.Errorf("where %s matches %d documents; Firestore's count() counts %d", where, got, want)
		}
	}
}

// protoValue is x as Firestore stores it.
func protoValue(x any) *firestorepb.Value {
	switch v := x.(type) {
	case nil:
		return &firestorepb.Value{ValueType: &firestorepb.Value_NullValue{}}
	case bool:
		return &firestorepb.Value{ValueType: &firestorepb.Value_BooleanValue{BooleanValue: v}}
	case int64:
		return integer(v)
	case float64:
		return double(v)
	case string:
		return &firestorepb.Value{ValueType: &firestorepb.Value_StringValue{StringValue: v}}
	case time.Time:
		return &firestorepb.Value{ValueType: &firestorepb.Value_TimestampValue{TimestampValue: timestamppb.New(v)}}
	case []byte:
		return &firestorepb.Value{ValueType: &firestorepb.Value_BytesValue{BytesValue: v}}
	case []any:
		arr := &firestorepb.ArrayValue{}
		for _, e := range v {
			arr.Values = append(arr.Values, protoValue(e))
		}
		return &firestorepb.Value{ValueType: &firestorepb.Value_ArrayValue{ArrayValue: arr}}
	case map[string]any:
		m := &firestorepb.MapValue{Fields: map[string]*firestorepb.Value{}}
		for k, e := range v {
			m.Fields[k] = protoValue(e)
		}
		return &firestorepb.Value{ValueType: &firestorepb.Value_MapValue{MapValue: m}}
	}
	panic(fmt.Sprintf("value %T", x))
}
