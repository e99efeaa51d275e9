package loadreport

import (
	"strings"
	"testing"
)

func TestExactCheck(t *testing.T) {
	cases := []struct {
		name      string
		o         Outcomes
		disturbed bool
		pass      bool
		says      string
	}{
		{"all counted", Outcomes{Exact: 1000, Acknowledged: 1000}, false, true, "exact 1000 = acknowledged 1000"},
		{"lost acknowledged increments", Outcomes{Exact: 990, Acknowledged: 1000, Unknown: 20}, true, false, "10 acknowledged increments lost"},
		{"doubles beyond the unknowns", Outcomes{Exact: 1010, Acknowledged: 1000, Unknown: 5}, true, false, "at least 5 increments applied twice"},
		{"doubles with no unknowns", Outcomes{Exact: 1001, Acknowledged: 1000}, true, false, "at least 1 increments applied twice"},
		{"some unknowns applied under faults", Outcomes{Exact: 1003, Acknowledged: 1000, Unknown: 5}, true, true, "3 of 5 unknown outcomes applied"},
		{"every unknown applied under faults", Outcomes{Exact: 1005, Acknowledged: 1000, Unknown: 5}, true, true, "5 of 5 unknown outcomes applied"},
		{"no unknown applied", Outcomes{Exact: 1000, Acknowledged: 1000, Unknown: 5}, true, true, "none of 5 unknown outcomes applied"},
		{"unknowns applied with nothing injected", Outcomes{Exact: 1002, Acknowledged: 1000, Unknown: 5}, false, false, "no fault or crash injected"},
		{"unknowns not applied with nothing injected", Outcomes{Exact: 1000, Acknowledged: 1000, Unknown: 5}, false, true, "none of 5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pass, why := c.o.Check(c.disturbed)
			if pass != c.pass || !strings.Contains(why, c.says) {
				t.Errorf("Check(%+v, disturbed=%v) = %v %q, want %v and %q", c.o, c.disturbed, pass, why, c.pass, c.says)
			}
		})
	}
}

func TestCheckAllNeverLetsOneCounterHideAnother(t *testing.T) {
	// Counter 0 was doubled once; counter 1 has an unknown outcome that was not applied. The totals
	// (exact 201 = acknowledged 200 + 1 unknown) look fine; counter 0 is not.
	per := []Outcomes{{Exact: 101, Acknowledged: 100}, {Exact: 100, Acknowledged: 100, Unknown: 1}}
	total, pass, why := CheckAll(per, true)
	if pass || !strings.Contains(why, "counter 0") || strings.Contains(why, "counter 1") {
		t.Errorf("CheckAll = %v %q, want a failure of counter 0 only", pass, why)
	}
	if total != (Outcomes{Exact: 201, Acknowledged: 200, Unknown: 1}) {
		t.Errorf("total = %+v", total)
	}
	if _, pass, why := CheckAll([]Outcomes{{Exact: 5, Acknowledged: 5}, {Exact: 7, Acknowledged: 6, Unknown: 2}}, true); !pass || why != "exact 12 = acknowledged 11 + 1 of 2 unknown outcomes applied" {
		t.Errorf("CheckAll of passing counters = %v %q", pass, why)
	}
}
