package loadreport

import (
	"fmt"
	"strings"
)

// Outcomes are what clients learnt about one counter's increments of 1, and its exact count.
type Outcomes struct {
	Exact        int64 `json:"exact"`        // sum of the shards after the load
	Acknowledged int64 `json:"acknowledged"` // each must be counted once
	Unknown      int64 `json:"unknown"`      // each may or may not be counted
}

// Add adds other's figures to o.
func (o *Outcomes) Add(other Outcomes) {
	o.Exact += other.Exact
	o.Acknowledged += other.Acknowledged
	o.Unknown += other.Unknown
}

// Check passes when acknowledged <= exact <= acknowledged + unknown, and exact == acknowledged
// unless disturbed (faults or crashes injected); the explanation says why.
func (o Outcomes) Check(disturbed bool) (pass bool, explanation string) {
	applied := o.Exact - o.Acknowledged
	switch {
	case applied < 0:
		return false, fmt.Sprintf("exact %d < acknowledged %d: %d acknowledged increments lost", o.Exact, o.Acknowledged, -applied)
	case applied > o.Unknown:
		return false, fmt.Sprintf("exact %d > acknowledged %d + unknown %d: at least %d increments applied twice",
			o.Exact, o.Acknowledged, o.Unknown, applied-o.Unknown)
	case applied > 0 && !disturbed:
		return false, fmt.Sprintf("exact %d > acknowledged %d with no fault or crash injected: %d of %d unknown outcomes applied",
			o.Exact, o.Acknowledged, applied, o.Unknown)
	case applied > 0:
		return true, fmt.Sprintf("exact %d = acknowledged %d + %d of %d unknown outcomes applied", o.Exact, o.Acknowledged, applied, o.Unknown)
	case o.Unknown > 0:
		return true, fmt.Sprintf("exact %d = acknowledged %d (none of %d unknown outcomes applied)", o.Exact, o.Acknowledged, o.Unknown)
	}
	return true, fmt.Sprintf("exact %d = acknowledged %d", o.Exact, o.Acknowledged)
}

// CheckAll checks each counter on its own and returns the total, whether all passed, and the
// total's explanation or every failing counter's.
func CheckAll(perCounter []Outcomes, disturbed bool) (total Outcomes, pass bool, explanation string) {
	pass = true
	var failures []string
	for i, oc := range perCounter {
		total.Add(oc)
		if ok, why := oc.Check(disturbed); !ok {
			pass = false
			failures = append(failures, fmt.Sprintf("counter %d: %s", i, why))
		}
	}
	if !pass {
		return total, false, strings.Join(failures, "; ")
	}
	_, explanation = total.Check(disturbed)
	return total, true, explanation
}
