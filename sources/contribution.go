package sources

import (
	"context"
	"math"
	"strconv"
	"strings"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
)

// contribution is what doc adds to d's counter: 0 when nil or outside Where, else 1, or with Sum its
// field's value as d.summed takes it (else 0).
func (c *Counting) contribution(ctx context.Context, d *Declaration, path string, doc *firestorepb.Document) int64 {
	if doc == nil {
		return 0
	}
	if !d.Where.matches(doc.GetFields()) {
		return 0
	}
	if d.Sum == "" {
		return 1
	}
	parts, _ := fieldPath(d.Sum)
	v := &firestorepb.Value{ValueType: &firestorepb.Value_MapValue{MapValue: &firestorepb.MapValue{Fields: doc.GetFields()}}}
	for _, p := range parts {
		v = v.GetMapValue().GetFields()[p]
	}
	var x any
	switch n := v.GetValueType().(type) {
	case nil:
		return 0
	case *firestorepb.Value_IntegerValue:
		x = n.IntegerValue
	case *firestorepb.Value_DoubleValue:
		x = n.DoubleValue
	}
	if n, ok := d.summed(x); ok {
		return n
	}
	c.log.WarnContext(ctx, "summed field is not a number the declaration sums; counted as 0", "document", path, "sum", d.Sum, "scale", d.Scale)
	return 0
}

// summed is what d sums of the value x of its Sum field: an integer, or with Scale N an integer or
// a double of at most N decimals, in units of 10^-N; false for anything else, or a value whose
// units, or their negation (its removal), leave int64.
func (d *Declaration) summed(x any) (int64, bool) {
	unit := int64(math.Pow10(d.Scale))
	switch n := x.(type) {
	case int64:
		if n > math.MaxInt64/unit || n < -math.MaxInt64/unit {
			return 0, false
		}
		return n * unit, true
	case float64:
		if d.Scale == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, false
		}
		// The shortest decimal that reads back as n: 12.5 is "12.5", whatever its binary digits.
		whole, fraction, _ := strings.Cut(strconv.FormatFloat(n, 'f', -1, 64), ".")
		if len(fraction) > d.Scale {
			return 0, false
		}
		units, err := strconv.ParseInt(whole+fraction+strings.Repeat("0", d.Scale-len(fraction)), 10, 64)
		return units, err == nil
	}
	return 0, false
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
