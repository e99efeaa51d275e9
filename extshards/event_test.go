package extshards_test

import (
	"testing"

	"cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/counters/extshards"
)

func TestNeedsFold(t *testing.T) {
	i := func(n int64) *firestorepb.Value {
		return &firestorepb.Value{ValueType: &firestorepb.Value_IntegerValue{IntegerValue: n}}
	}
	d := func(x float64) *firestorepb.Value {
		return &firestorepb.Value{ValueType: &firestorepb.Value_DoubleValue{DoubleValue: x}}
	}
	m := func(f map[string]*firestorepb.Value) *firestorepb.Value {
		return &firestorepb.Value{ValueType: &firestorepb.Value_MapValue{MapValue: &firestorepb.MapValue{Fields: f}}}
	}
	arr := func(vs ...*firestorepb.Value) *firestorepb.Value {
		return &firestorepb.Value{ValueType: &firestorepb.Value_ArrayValue{ArrayValue: &firestorepb.ArrayValue{Values: vs}}}
	}
	shard := "projects/p/databases/(default)/documents/posts/p1/_counter_shards_/"
	for _, c := range []struct {
		name string
		doc  *firestorepb.Document
		want bool
	}{
		{"deleted", nil, false},
		{"an increment", &firestorepb.Document{Name: shard + "u1", Fields: map[string]*firestorepb.Value{"likes": i(1)}}, true},
		{"a nested double", &firestorepb.Document{Name: shard + "u1", Fields: map[string]*firestorepb.Value{"a": m(map[string]*firestorepb.Value{"b": d(0.5)})}}, true},
		{"emptied by a fold", &firestorepb.Document{Name: shard + "u1", Fields: map[string]*firestorepb.Value{"likes": i(0), "a": m(map[string]*firestorepb.Value{"b": d(0)})}}, false},
		{"a partial", &firestorepb.Document{Name: shard + "\tabcd", Fields: map[string]*firestorepb.Value{"_updates_": arr(m(nil))}}, true},
		{"an empty partial", &firestorepb.Document{Name: shard + "\tabcd", Fields: map[string]*firestorepb.Value{"_updates_": arr()}}, false},
	} {
		if got := extshards.NeedsFold(c.doc); got != c.want {
			t.Errorf("%s: NeedsFold = %t, want %t", c.name, got, c.want)
		}
	}
}
