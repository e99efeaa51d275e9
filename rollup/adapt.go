package rollup

import (
	"math"
	"time"

	"github.com/shardcount/counters/counter"
)

// ShardPolicy sizes a shard count for Target writes per second per shard: up at once above GrowAbove,
// down after ShrinkAfter below ShrinkBelow.
type ShardPolicy struct {
	Target      float64
	GrowAbove   float64
	ShrinkBelow float64
	ShrinkAfter time.Duration
}

// DefaultShardPolicy keeps every shard well under one write per second.
var DefaultShardPolicy = ShardPolicy{Target: 0.1, GrowAbove: 0.15, ShrinkBelow: 0.03, ShrinkAfter: 5 * time.Minute}

// shardDecision is a roll-up's shard count, rate, and coolSince (zero: not cool).
type shardDecision struct {
	numShards int
	rate      float64
	coolSince time.Time
}

// decide measures the rate from roll-up prev to one at `at` that saw writes shard writes, and sizes
// shape for it. Nothing is measured without prev or after writes went back; when prev is not older
// than at, its rate and cool clock stand.
func (p ShardPolicy) decide(shape counter.Shape, prev *Document, writes int64, at time.Time) shardDecision {
	keep := shardDecision{numShards: shape.NumShards}
	switch {
	case prev == nil || writes < prev.ShardWrites:
		return keep
	case !at.After(prev.UpdatedAt):
		keep.rate, keep.coolSince = prev.WriteRate, prev.CoolSince
		return keep
	}
	keep.rate = float64(writes-prev.ShardWrites) / at.Sub(prev.UpdatedAt).Seconds()
	if shape.Pinned() {
		return keep
	}
	perShard := keep.rate / float64(shape.NumShards)
	desired := shape.Clamp(max(1, int(math.Ceil(keep.rate/p.Target))))
	switch {
	case perShard > p.GrowAbove && desired > shape.NumShards:
		keep.numShards = desired
	case perShard < p.ShrinkBelow:
		// Cool since prev at least: the window's average was low.
		keep.coolSince = prev.CoolSince
		if keep.coolSince.IsZero() {
			keep.coolSince = prev.UpdatedAt
		}
		if at.Sub(keep.coolSince) >= p.ShrinkAfter && desired < shape.NumShards {
			keep.numShards, keep.coolSince = desired, time.Time{}
		}
	}
	return keep
}

// reshapes reports whether Adapt must change the count or fold shards outside 0..NumShards-1.
func (d shardDecision) reshapes(shape counter.Shape, totals counter.Totals) bool {
	return d.numShards != shape.NumShards || totals.Shards > int64(shape.NumShards)
}
