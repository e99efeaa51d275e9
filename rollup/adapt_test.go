package rollup

import (
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
)

// TestShardPolicyDecide checks the shard-count decisions of the default policy from what two
// successive roll-ups saw; no database, no clock.
func TestShardPolicyDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	adaptive := func(n int) counter.Shape { return counter.Shape{NumShards: n, MinShards: 10, MaxShards: 1000} }
	prev := func(writes int64, coolSince time.Time) *Document {
		return &Document{UpdatedAt: t0, ShardWrites: writes, CoolSince: coolSince}
	}
	cases := []struct {
		name   string
		shape  counter.Shape
		prev   *Document
		writes int64
		after  time.Duration
		want   shardDecision
	}{
		{"first roll-up: nothing measured", adaptive(10), nil, 50, time.Second,
			shardDecision{numShards: 10}},
		{"writes went back (a recreated counter): nothing measured", adaptive(10), prev(500, time.Time{}), 20, time.Second,
			shardDecision{numShards: 10}},
		{"computed before the previous roll-up (clocks differ): its rate and cool clock stand", adaptive(800),
			&Document{UpdatedAt: t0, ShardWrites: 10, WriteRate: 0.5, CoolSince: t0.Add(-time.Minute)}, 12, -time.Second,
			shardDecision{numShards: 800, rate: 0.5, coolSince: t0.Add(-time.Minute)}},
		{"hot: grows at once to 0.1 writes/s per shard", adaptive(10), prev(1000, time.Time{}), 1080, time.Second,
			shardDecision{numShards: 800, rate: 80}},
		{"warm, below the growth threshold: stays", adaptive(600), prev(1000, time.Time{}), 1080, time.Second,
			shardDecision{numShards: 600, rate: 80}},
		{"growth stops at max_shards", adaptive(10), prev(0, time.Time{}), 400, time.Second,
			shardDecision{numShards: 1000, rate: 400}},
		{"pinned: measured, never changed", counter.Shape{NumShards: 10, MinShards: 10, MaxShards: 10}, prev(0, time.Time{}), 80, time.Second,
			shardDecision{numShards: 10, rate: 80}},
		{"cool for a second: stays, cool since the previous roll-up", adaptive(800), prev(0, time.Time{}), 2, time.Second,
			shardDecision{numShards: 800, rate: 2, coolSince: t0}},
		{"cool for five minutes: shrinks to the size for its rate", adaptive(800), prev(0, t0.Add(-5*time.Minute)), 2, time.Second,
			shardDecision{numShards: 20, rate: 2}},
		{"shrinks no lower than min_shards", adaptive(800), prev(0, t0.Add(-10*time.Minute)), 0, time.Second,
			shardDecision{numShards: 10}},
		{"idle for an hour, written again: the gap counts as cool", adaptive(800), prev(0, time.Time{}), 36, time.Hour,
			shardDecision{numShards: 10, rate: 0.01}},
		{"warm again after cooling: the cool clock restarts", adaptive(800), prev(0, t0.Add(-4*time.Minute)), 60, time.Second,
			shardDecision{numShards: 800, rate: 60}},
	}
	for _, c := range cases {
		got := DefaultShardPolicy.decide(c.shape, c.prev, c.writes, t0.Add(c.after))
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestDecisionReshapesToFoldStrayShards: a roll-up that keeps the count still adapts when the shards
// summed outnumber the count (strays past num_shards, never folded by a shrink at min_shards).
func TestDecisionReshapesToFoldStrayShards(t *testing.T) {
	atMin := counter.Shape{NumShards: 10, MinShards: 10, MaxShards: 1000}
	cases := []struct {
		name     string
		decision shardDecision
		shards   int64
		want     bool
	}{
		{"count kept, no strays", shardDecision{numShards: 10}, 10, false},
		{"count kept, shards not all written yet", shardDecision{numShards: 10}, 4, false},
		{"count kept at min_shards, strays", shardDecision{numShards: 10}, 11, true},
		{"count grows", shardDecision{numShards: 20}, 10, true},
	}
	for _, tc := range cases {
		if got := tc.decision.reshapes(atMin, counter.Totals{Shards: tc.shards}); got != tc.want {
			t.Errorf("%s: reshapes = %v, want %v", tc.name, got, tc.want)
		}
	}
}
