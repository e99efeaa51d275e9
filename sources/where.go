package sources

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strings"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
)

// Where is a declaration's filters, all of which a counted document matches, as Firestore's query
// with them matches it. In JSON: an object of field: value (equality), or a list of
// [field, operator, value] with Firestore's operators.
type Where []Filter

// Filter is one [field, operator, value] of a Where.
type Filter struct {
	Path  []string // the field's path ("a.b": a's field b)
	Op    string
	Value any // string, bool, nil, int64 or float64; a list of them for in, not-in and array-contains-any
}

// Operators are Firestore's query operators.
var Operators = []string{"==", "!=", "<", "<=", ">", ">=", "in", "not-in", "array-contains", "array-contains-any"}

// maxListed is the most values an in, not-in or array-contains-any filter takes (Firestore's).
const maxListed = 30

// UnmarshalJSON reads the object form or the list form.
func (w *Where) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	*w = nil
	switch x := raw.(type) {
	case map[string]any:
		fields := make([]string, 0, len(x))
		for field := range x {
			fields = append(fields, field)
		}
		sort.Strings(fields)
		for _, field := range fields {
			if field == "" || strings.HasPrefix(field, "__") {
				return fmt.Errorf("where: %q is not a field name", field)
			}
			*w = append(*w, Filter{Path: []string{field}, Op: "==", Value: x[field]})
		}
	case []any:
		for i, entry := range x {
			triple, ok := entry.([]any)
			if !ok || len(triple) != 3 {
				return fmt.Errorf("where[%d]: want [field, operator, value]", i)
			}
			field, _ := triple[0].(string)
			op, _ := triple[1].(string)
			path, err := fieldPath(field)
			if err != nil {
				return fmt.Errorf("where[%d]: %w", i, err)
			}
			*w = append(*w, Filter{Path: path, Op: op, Value: triple[2]})
		}
	default:
		return errors.New(`where: want {"field": value, ...} or [["field", "operator", value], ...]`)
	}
	return nil
}

// MarshalJSON writes the list form.
func (w Where) MarshalJSON() ([]byte, error) {
	out := make([][]any, len(w))
	for i, f := range w {
		out[i] = []any{strings.Join(f.Path, "."), f.Op, f.Value}
	}
	return json.Marshal(out)
}

// check refuses a filter Firestore would not run, or whose value it cannot compare, and turns
// values into their Firestore types; and a set of filters no one Firestore query can hold.
func (w Where) check() error {
	var arrays, disjunctions, notEqual []string
	for i := range w {
		f := &w[i]
		name := strings.Join(f.Path, ".")
		var err error
		switch f.Op {
		case "==", "!=":
			f.Value, err = whereValue(f.Value)
		case "array-contains":
			if f.Value, err = whereValue(f.Value); err == nil && f.Value == nil {
				err = errNullCompared
			}
		case "<", "<=", ">", ">=":
			if f.Value, err = whereValue(f.Value); err == nil && !isNumberOrString(f.Value) {
				err = errors.New("a range compares a number or a string")
			}
		case "in", "not-in", "array-contains-any":
			f.Value, err = whereList(f.Value)
		default:
			err = fmt.Errorf("unknown operator %q; Firestore's are %q", f.Op, Operators)
		}
		if err != nil {
			return fmt.Errorf("where %q %s: %w", name, f.Op, err)
		}
		switch f.Op {
		case "array-contains", "array-contains-any":
			arrays = append(arrays, f.Op)
		}
		switch f.Op {
		case "in", "not-in", "array-contains-any":
			disjunctions = append(disjunctions, f.Op)
		}
		if f.Op == "!=" || f.Op == "not-in" {
			notEqual = append(notEqual, f.Op)
		}
	}
	switch {
	case len(arrays) > 1:
		return fmt.Errorf("where: %q: Firestore runs at most one array-contains or array-contains-any filter in a query", arrays)
	case len(disjunctions) > 1:
		return fmt.Errorf("where: %q: Firestore runs at most one in, not-in or array-contains-any filter in a query", disjunctions)
	case len(notEqual) > 1:
		return fmt.Errorf("where: %q: Firestore runs at most one != or not-in filter in a query", notEqual)
	}
	return nil
}

// errNullCompared refuses null where Firestore compares it with == and != only.
var errNullCompared = errors.New("null is compared with == or != only")

func isNumberOrString(v any) bool {
	switch v.(type) {
	case int64, float64, string:
		return true
	}
	return false
}

// whereList is an in, not-in or array-contains-any value: a list of 1 to maxListed values.
func whereList(v any) ([]any, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 || len(list) > maxListed {
		return nil, fmt.Errorf("want a list of 1 to %d values", maxListed)
	}
	out := make([]any, len(list))
	for i, x := range list {
		var err error
		if out[i], err = whereValue(x); err != nil {
			return nil, err
		}
		if out[i] == nil {
			return nil, errNullCompared
		}
	}
	return out, nil
}

// query is q with w's filters.
func (w Where) query(q firestore.Query) firestore.Query {
	for _, f := range w {
		q = q.WherePath(firestore.FieldPath(f.Path), f.Op, f.Value)
	}
	return q
}

// matches reports whether a document of fields matches every filter of w.
func (w Where) matches(fields map[string]*firestorepb.Value) bool {
	for _, f := range w {
		if !f.matches(lookup(fields, f.Path)) {
			return false
		}
	}
	return true
}

// lookup is the value at path in fields; nil when missing.
func lookup(fields map[string]*firestorepb.Value, path []string) *firestorepb.Value {
	var v *firestorepb.Value
	for i, p := range path {
		if i > 0 {
			fields = v.GetMapValue().GetFields()
		}
		if v = fields[p]; v == nil {
			return nil
		}
	}
	return v
}

// matches reports whether a field holding v (nil: missing) matches f, as Firestore's query does: a
// missing field matches nothing, and != and not-in do not match null (they match NaN).
func (f Filter) matches(v *firestorepb.Value) bool {
	if v == nil {
		return false
	}
	switch f.Op {
	case "==":
		return equal(v, f.Value)
	case "!=":
		return !isNull(v) && !equal(v, f.Value)
	case "in":
		return slices.ContainsFunc(f.Value.([]any), func(want any) bool { return equal(v, want) })
	case "not-in":
		return !isNull(v) && !slices.ContainsFunc(f.Value.([]any), func(want any) bool { return equal(v, want) })
	case "array-contains":
		return slices.ContainsFunc(v.GetArrayValue().GetValues(), func(e *firestorepb.Value) bool { return equal(e, f.Value) })
	case "array-contains-any":
		return slices.ContainsFunc(v.GetArrayValue().GetValues(), func(e *firestorepb.Value) bool {
			return slices.ContainsFunc(f.Value.([]any), func(want any) bool { return equal(e, want) })
		})
	}
	c, ok := compare(v, f.Value)
	if !ok {
		return false
	}
	switch f.Op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	default:
		return c >= 0
	}
}

func isNull(v *firestorepb.Value) bool {
	_, null := v.GetValueType().(*firestorepb.Value_NullValue)
	return null
}

// compare orders v against want (a number or a string) as Firestore does within a type: numbers
// exactly, integers and doubles alike, strings by their UTF-8 bytes; false when v is of another
// type, or NaN, which no range matches.
func compare(v *firestorepb.Value, want any) (int, bool) {
	if s, ok := want.(string); ok {
		x, ok := v.GetValueType().(*firestorepb.Value_StringValue)
		if !ok {
			return 0, false
		}
		return strings.Compare(x.StringValue, s), true
	}
	a, ok := number(v)
	if !ok {
		return 0, false
	}
	var b big.Float
	switch n := want.(type) {
	case int64:
		b.SetInt64(n)
	case float64:
		b.SetFloat64(n)
	}
	return a.Cmp(&b), true
}

// number is v as an exact number; false when v is no number, or NaN.
func number(v *firestorepb.Value) (*big.Float, bool) {
	switch x := v.GetValueType().(type) {
	case *firestorepb.Value_IntegerValue:
		return new(big.Float).SetInt64(x.IntegerValue), true
	case *firestorepb.Value_DoubleValue:
		if math.IsNaN(x.DoubleValue) {
			return nil, false
		}
		return new(big.Float).SetFloat64(x.DoubleValue), true
	}
	return nil, false
}
