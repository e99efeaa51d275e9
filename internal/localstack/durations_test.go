package localstack

import (
	"testing"
	"time"
)

// TestDurationPercentilesWithinABucket: percentiles of counted durations are within a tenth above
// the true ones, and the max is exact.
func TestDurationPercentilesWithinABucket(t *testing.T) {
	var d durations
	if got := d.percentiles(); got != (Percentiles{}) {
		t.Errorf("empty: %+v, want zeros", got)
	}
	for i := 1; i <= 1000; i++ {
		d.add(time.Duration(i) * time.Millisecond)
	}
	got := d.percentiles()
	for name, c := range map[string]struct{ got, want time.Duration }{
		"p50": {got.P50, 500 * time.Millisecond}, "p99": {got.P99, 990 * time.Millisecond}, "max": {got.Max, time.Second},
	} {
		if c.got < c.want || float64(c.got) > 1.1*float64(c.want) {
			t.Errorf("%s = %v, want %v to 10%% above", name, c.got, c.want)
		}
	}
	if got.Max != time.Second {
		t.Errorf("max = %v, want exactly 1s", got.Max)
	}
}
