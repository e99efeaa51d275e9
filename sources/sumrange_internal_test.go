package sources

import (
	"math"
	"math/big"
	"testing"
)

// shardsHolding is a sum counter's shards holding values.
func shardsHolding(values ...int64) *shardValues {
	s := &shardValues{live: values}
	for _, v := range values {
		s.total.Add(&s.total, big.NewInt(v))
	}
	return s
}

// TestCountTakesEachChangeInFullElseAtZeroElseAsBefore: a change counts in full while the total
// stays within int64; past it, its document counts 0; past that too, it counts as it did. What
// is left out is kept per document and caught up by its next change that fits.
func TestCountTakesEachChangeInFullElseAtZeroElseAsBefore(t *testing.T) {
	a, b := Write{Path: "o/a"}, Write{Path: "o/b"}
	cases := []struct {
		name       string
		shards     *shardValues
		unapplied  map[string]*big.Int
		ch         change
		total      int64
		outOfRange bool
		left       string // what the document's record holds after: "" none written
	}{
		{"in full", shardsHolding(5, 0), nil, change{write: a, delta: 20, value: 20}, 25, false, ""},
		{"at zero", shardsHolding(math.MaxInt64-10, 0), nil, change{write: a, delta: 20, value: 20}, math.MaxInt64 - 10, true, "20"},
		{"caught up", shardsHolding(math.MaxInt64-10, 0), map[string]*big.Int{"o/a": big.NewInt(20)}, change{write: a, delta: -15, value: 5}, math.MaxInt64 - 5, false, "0"},
		{"an update at zero", shardsHolding(math.MaxInt64-200, 100), nil, change{write: b, delta: math.MaxInt64 - 100, value: math.MaxInt64}, math.MaxInt64 - 200, true, "9223372036854775807"},
		{"as before", shardsHolding(math.MaxInt64-1, 0), nil, change{write: b, delta: 110, value: 100}, math.MaxInt64 - 1, true, "110"},
	}
	for _, c := range cases {
		before := c.shards.total.Int64()
		plan, byShard := c.shards.count([]change{c.ch}, []int{0}, c.unapplied, 0)
		if !c.shards.total.IsInt64() || c.shards.total.Int64() != c.total {
			t.Errorf("%s: total %s, want %d", c.name, &c.shards.total, c.total)
		}
		var placed int64
		for _, deltas := range byShard {
			for _, d := range deltas {
				placed += d.Delta
			}
		}
		if placed != c.total-before {
			t.Errorf("%s: deltas placed add up to %d, want %d", c.name, placed, c.total-before)
		}
		if plan.outOfRange[0] != c.outOfRange {
			t.Errorf("%s: out of range %v, want %v", c.name, plan.outOfRange[0], c.outOfRange)
		}
		left := ""
		if u := plan.unapplied[c.ch.write.Path]; u != nil {
			left = u.String()
		}
		if left != c.left {
			t.Errorf("%s: record %q, want %q", c.name, left, c.left)
		}
	}
}

// TestPlaceKeepsEveryShardWithinInt64: a delta goes where its shard stays within int64, nearest
// 0, even when the preferred shard would saturate.
func TestPlaceKeepsEveryShardWithinInt64(t *testing.T) {
	s := shardsHolding(math.MaxInt64-5, -(math.MaxInt64 - 5), 0)
	if shard, ok := s.place(big.NewInt(10), 0, -1); !ok || shard != 2 {
		t.Errorf("placed on %d (%v), want shard 2: shard 0 would pass int64, shard 1 stay far from 0", shard, ok)
	}
	if _, ok := s.place(big.NewInt(math.MaxInt64), 0, -1); ok {
		t.Errorf("placed a delta taking the total (10) past int64")
	}
	if s.total.Int64() != 10 {
		t.Errorf("total %s after a refused placement, want 10", &s.total)
	}
}
