package extshards

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"cloud.google.com/go/firestore"
)

// ErrOverflow reports integer fields whose sum does not fit int64.
var ErrOverflow = errors.New("sum of integer fields overflows int64")

// sum is a tree of totals: int64 or float64 leaves, sum inner nodes.
type sum map[string]any

// add adds data's numeric leaves into s (int plus double makes double, as Firestore does) and says
// whether data held only numbers. A number/map clash is a *FieldConflictError, s then partly added.
func (s sum) add(data map[string]any) (onlyNumbers bool, err error) {
	onlyNumbers = true
	for k, v := range data {
		switch v := v.(type) {
		case int64:
			if _, isMap := s[k].(sum); isMap {
				return false, &FieldConflictError{Field: k}
			}
			if err := s.addInt(k, v); err != nil {
				return false, err
			}
		case float64:
			if _, isMap := s[k].(sum); isMap {
				return false, &FieldConflictError{Field: k}
			}
			s.addFloat(k, v)
		default:
			m, isMap := asMap(v)
			if !isMap {
				onlyNumbers = false
				continue
			}
			child, ok := s[k].(sum)
			if _, exists := s[k]; exists && !ok {
				return false, &FieldConflictError{Field: k}
			}
			if !ok {
				child = sum{}
				s[k] = child
			}
			only, err := child.add(m)
			if conflict := (*FieldConflictError)(nil); errors.As(err, &conflict) {
				conflict.Field = k + "." + conflict.Field
				return false, conflict
			}
			if err != nil {
				return false, fmt.Errorf("%s.%w", k, err)
			}
			onlyNumbers = onlyNumbers && only
		}
	}
	return onlyNumbers, nil
}

// conflict returns a *FieldConflictError for the first number/map clash of s and other, else nil.
func (s sum) conflict(other sum) error {
	for k, v := range other {
		cur, exists := s[k]
		if !exists {
			continue
		}
		curMap, curIsMap := cur.(sum)
		vMap, vIsMap := v.(sum)
		if curIsMap != vIsMap {
			return &FieldConflictError{Field: k}
		}
		if !curIsMap {
			continue
		}
		if err := curMap.conflict(vMap); err != nil {
			conflict := err.(*FieldConflictError)
			conflict.Field = k + "." + conflict.Field
			return conflict
		}
	}
	return nil
}

// asMap returns v as a map when it is a nested map or a sum.
func asMap(v any) (map[string]any, bool) {
	switch v := v.(type) {
	case map[string]any:
		return v, true
	case sum:
		return v, true
	}
	return nil, false
}

func (s sum) addInt(k string, v int64) error {
	switch cur := s[k].(type) {
	case int64:
		if (v > 0 && cur > math.MaxInt64-v) || (v < 0 && cur < math.MinInt64-v) {
			return fmt.Errorf("%s: %w", k, ErrOverflow)
		}
		s[k] = cur + v
	case float64:
		s[k] = cur + float64(v)
	default:
		s[k] = v
	}
	return nil
}

func (s sum) addFloat(k string, v float64) {
	switch cur := s[k].(type) {
	case int64:
		s[k] = float64(cur) + v
	case float64:
		s[k] = cur + v
	default:
		s[k] = v
	}
}

// increments lists, sorted, an Increment per non-zero leaf of s (every leaf when keepZeros) below
// prefix, negated when negate.
func (s sum) increments(prefix []string, negate, keepZeros bool) []firestore.Update {
	var out []firestore.Update
	for _, k := range slices.Sorted(mapKeys(s)) {
		path := append(slices.Clone(prefix), k)
		switch v := s[k].(type) {
		case int64:
			if v != 0 || keepZeros {
				if negate {
					v = -v
				}
				out = append(out, firestore.Update{FieldPath: path, Value: firestore.Increment(v)})
			}
		case float64:
			if v != 0 || keepZeros {
				if negate {
					v = -v
				}
				out = append(out, firestore.Update{FieldPath: path, Value: firestore.Increment(v)})
			}
		case sum:
			out = append(out, v.increments(path, negate, keepZeros)...)
		}
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
