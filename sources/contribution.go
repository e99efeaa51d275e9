package sources

import (
	"context"
	"math"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
)

// contribution is what doc adds to d's counter: 0 when nil or outside Where, else 1, or with Sum its
// integer field (else 0).
func (c *Counting) contribution(ctx context.Context, d *Declaration, path string, doc *firestorepb.Document) int64 {
	if doc == nil {
		return 0
	}
	for field, want := range d.Where {
		if !equal(doc.GetFields()[field], want) {
			return 0
		}
	}
	if d.Sum == "" {
		return 1
	}
	parts, _ := fieldPath(d.Sum)
	v := &firestorepb.Value{ValueType: &firestorepb.Value_MapValue{MapValue: &firestorepb.MapValue{Fields: doc.GetFields()}}}
	for _, p := range parts {
		v = v.GetMapValue().GetFields()[p]
	}
	switch x := v.GetValueType().(type) {
	case nil:
		return 0
	case *firestorepb.Value_IntegerValue:
		return x.IntegerValue
	}
	c.log.WarnContext(ctx, "summed field is not an integer; counted as 0", "document", path, "sum", d.Sum)
	return 0
}

// equal is Firestore's == of a document value and a where value; nil equals nothing.
func equal(v *firestorepb.Value, want any) bool {
	switch x := v.GetValueType().(type) {
	case *firestorepb.Value_NullValue:
		return want == nil
	case *firestorepb.Value_BooleanValue:
		b, ok := want.(bool)
		return ok && b == x.BooleanValue
	case *firestorepb.Value_StringValue:
		s, ok := want.(string)
		return ok && s == x.StringValue
	case *firestorepb.Value_IntegerValue:
		switch w := want.(type) {
		case int64:
			return w == x.IntegerValue
		case float64:
			return sameNumber(x.IntegerValue, w)
		}
	case *firestorepb.Value_DoubleValue:
		switch w := want.(type) {
		case int64:
			return sameNumber(w, x.DoubleValue)
		case float64:
			return w == x.DoubleValue
		}
	}
	return false
}

// sameNumber reports whether i and f are one number, as Firestore compares an integer and a double:
// exactly, so 2^53+1 is not the double 2^53 that float64(2^53+1) rounds to.
func sameNumber(i int64, f float64) bool {
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 { // MaxInt64 rounds up to 2^63
		return false
	}
	return int64(f) == i
}
