package sources

import (
	"math"
	"math/big"
	"testing"
)

// TestCountTakesEachChangeInFullElseAtZeroElseAsBefore: a change counts in full while the total
// stays within int64; past it, its document counts 0; past that too, it counts as it did. What
// is left out is kept per document and caught up by its next change that fits.
func TestCountTakesEachChangeInFullElseAtZeroElseAsBefore(t *testing.T) {
	a, b := Write{Path: "o/a"}, Write{Path: "o/b"}
	cases := []struct {
		name       string
		total      int64
		unapplied  map[string]*big.Int
		ch         change
		after      int64
		outOfRange bool
		left       string // what the document's record holds after: "" none written
	}{
		{"in full", 5, nil, change{write: a, delta: 20, value: 20}, 25, false, ""},
		{"at zero", math.MaxInt64 - 10, nil, change{write: a, delta: 20, value: 20}, math.MaxInt64 - 10, true, "20"},
		{"caught up", math.MaxInt64 - 10, map[string]*big.Int{"o/a": big.NewInt(20)}, change{write: a, delta: -15, value: 5}, math.MaxInt64 - 5, false, "0"},
		{"an update at zero", math.MaxInt64 - 100, nil, change{write: b, delta: math.MaxInt64 - 100, value: math.MaxInt64}, math.MaxInt64 - 200, true, "9223372036854775807"},
		{"as before", math.MaxInt64 - 1, nil, change{write: b, delta: 110, value: 100}, math.MaxInt64 - 1, true, "110"},
	}
	for _, c := range cases {
		s := &shardValues{live: 3, counts: map[int]int64{}}
		s.total.SetInt64(c.total)
		plan, parts := s.count([]change{c.ch}, []int{0}, c.unapplied)
		if !s.total.IsInt64() || s.total.Int64() != c.after {
			t.Errorf("%s: total %s, want %d", c.name, &s.total, c.after)
		}
		var counted int64
		for _, p := range parts {
			counted += p.Delta
		}
		if counted != c.after-c.total {
			t.Errorf("%s: parts for the window buckets add up to %d, want %d", c.name, counted, c.after-c.total)
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

// TestBalancedCountsShareTheTotalsSign: the shards' new counts add up to the total, all of its sign
// and within one of each other, so no order of adding them leaves int64; a retired shard gets 0.
func TestBalancedCountsShareTheTotalsSign(t *testing.T) {
	for _, total := range []int64{math.MaxInt64, -math.MaxInt64, math.MinInt64, 7, -7, 0} {
		s := &shardValues{live: 4, counts: map[int]int64{0: 5, 2: -3, 9: 1}}
		s.total.SetInt64(total)
		counts := s.balanced()
		sum := new(big.Int)
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for n, v := range counts {
			sum.Add(sum, big.NewInt(v))
			if n >= s.live {
				if v != 0 {
					t.Errorf("total %d: retired shard %d holds %d, want 0", total, n, v)
				}
				continue
			}
			lo, hi = min(lo, v), max(hi, v)
			if v != 0 && (v > 0) != (total > 0) {
				t.Errorf("total %d: shard %d holds %d, of the other sign", total, n, v)
			}
		}
		if len(counts) != 5 || !sum.IsInt64() || sum.Int64() != total || hi-lo > 1 {
			t.Errorf("total %d: counts %v (sum %s), want the 4 live shards within 1 of each other and shard 9 at 0", total, counts, sum)
		}
	}
}
