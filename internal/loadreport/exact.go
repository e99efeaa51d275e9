package loadreport

import (
	"fmt"
	"strings"
)

// Outcomes are what clients learnt about one counter's increments (deltas of 1), and its exact count.
type Outcomes struct {
	// Exact is the counter's exact value after the load (the sum of its shards).
	Exact int64 `json:"exact"`
	// Acknowledged increments were answered as applied (200): each must be counted exactly once.
	Acknowledged int64 `json:"acknowledged"`
	// Unknown increments ended with an unknown outcome (a 5xx other than 503, or a connection lost
	// after the request was sent, not resolved by a keyed retry): each may or may not be counted.
	Unknown int64 `json:"unknown"`
}

// Add adds o's figures to a total.
func (o *Outcomes) Add(other Outcomes) {
	o.Exact += other.Exact
	o.Acknowledged += other.Acknowledged
	o.Unknown += other.Unknown
}

// Check says whether the exact count is what the clients were told, and explains every difference.
// Every acknowledged increment must be counted once, and an increment with an unknown outcome at most
// once: acknowledged <= exact <= acknowledged + unknown. When no fault and no crash was injected
// (disturbed is false) nothing may be in doubt: exact must equal acknowledged.
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

// CheckAll checks every counter's outcomes (a double on one counter is never hidden by an unknown
// outcome on another) and returns their total, whether all passed, and the explanation: the total's,
// or every failing counter's.
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
