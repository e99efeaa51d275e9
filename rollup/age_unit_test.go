package rollup

import (
	"testing"
	"time"
)

// TestRollupAgeCountsFromTheFirstUncoveredChange: a trigger's roll-up trails from the later of the
// replaced roll-up and the first change it covers; the sweep's from the replaced roll-up; a first
// roll-up by the sweep has no age.
func TestRollupAgeCountsFromTheFirstUncoveredChange(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	prev := &Document{UpdatedAt: at(0)}
	for _, c := range []struct {
		name        string
		previous    *Document
		source      string
		firstChange time.Time
		want        time.Duration
	}{
		{"idle counter, then a change", prev, SourceTrigger, at(3600), 2 * time.Second},
		{"change before the previous roll-up", prev, SourceTrigger, at(-5), 3602 * time.Second},
		{"first roll-up by a trigger", nil, SourceTrigger, at(3600), 2 * time.Second},
		{"sweep: from the previous roll-up", prev, SourceScheduler, at(3601), 3602 * time.Second},
		{"sweep: first roll-up", nil, SourceScheduler, at(3601), 0},
	} {
		if got := rollupAge(c.previous, c.source, c.firstChange, at(3602)); got != c.want {
			t.Errorf("%s: age %v, want %v", c.name, got, c.want)
		}
	}
}
