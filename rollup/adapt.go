package rollup

import (
	"math"
	"time"

	"github.com/shardcount/counters/counter"
)

// ShardPolicy sizes a counter's shard count from its shard write rate across every instance, measured
// by each roll-up from the growth of the shards' writes since the previous roll-up. It grows the
// count at once, to the size for Target, when the rate per shard exceeds GrowAbove; it shrinks it once
// the rate per shard has stayed below ShrinkBelow for ShrinkAfter.
type ShardPolicy struct {
	// Target is the writes per second per shard the count is sized for.
	Target float64
	// GrowAbove is the writes per second per shard above which the count grows.
	GrowAbove float64
	// ShrinkBelow is the writes per second per shard below which the counter counts as cool.
	ShrinkBelow float64
	// ShrinkAfter is how long a counter stays cool before its count shrinks.
	ShrinkAfter time.Duration
}

// DefaultShardPolicy keeps every shard well under one write per second over any 10 s window.
var DefaultShardPolicy = ShardPolicy{Target: 0.1, GrowAbove: 0.15, ShrinkBelow: 0.03, ShrinkAfter: 5 * time.Minute}

// shardDecision is what a roll-up decides about its counter's shard count.
type shardDecision struct {
	// numShards is the count the counter should have.
	numShards int
	// rate is the measured shard writes per second; when nothing could be measured, the previous
	// roll-up's (its clock was ahead of ours), or zero (a first roll-up, a recreated counter).
	rate float64
	// coolSince is when the counter became cool; zero when it is not.
	coolSince time.Time
}

// decide measures the write rate between roll-up prev and a roll-up at `at` that saw writes shard
// writes in total, and sizes shape's count for it. Nothing is measured without a previous roll-up,
// when the writes went back (a deleted and recreated counter: it starts afresh), or when prev is not
// older than at (another instance's clock ahead of ours: prev's measurement and cool clock stand).
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
		// Cool since the previous roll-up at least: the average over the whole window was low.
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

// reshapes reports whether a roll-up that decided d for a counter of shape, whose shards summed to
// totals, must call Adapt: to change the count, or, with the count unchanged, to fold shard documents
// outside 0..NumShards-1 (more documents than the count means some are outside). A counter at
// min_shards never shrinks, so without this no shrink would ever fold them.
func (d shardDecision) reshapes(shape counter.Shape, totals counter.Totals) bool {
	return d.numShards != shape.NumShards || totals.Shards > int64(shape.NumShards)
}
