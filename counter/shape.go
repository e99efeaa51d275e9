package counter

import (
	"fmt"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/shared"
)

// Shape is how a counter is sharded: shards 0..NumShards-1, adapted within MinShards..MaxShards.
type Shape struct {
	NumShards            int
	MinShards, MaxShards int
}

// Pinned reports whether the bounds are equal, fixing the count.
func (sh Shape) Pinned() bool { return sh.MinShards == sh.MaxShards }

// Clamp returns n within the shape's bounds.
func (sh Shape) Clamp(n int) int { return min(max(n, sh.MinShards), sh.MaxShards) }

// shardCountField reads a shard count field, def when absent.
func shardCountField(id string, data map[string]any, field string, def int) (int, error) {
	v, ok := data[field]
	if !ok {
		return def, nil
	}
	n, isInt := v.(int64)
	if !isInt || n < wire.MinNumShards || n > wire.MaxNumShards {
		return 0, fmt.Errorf("%w: counter %q: %s is %v, want an integer from %d to %d",
			ErrUncountable, id, field, v, wire.MinNumShards, wire.MaxNumShards)
	}
	return int(n), nil
}

// fields is the shape as counter document fields.
func (sh Shape) fields() map[string]any {
	return map[string]any{
		shared.FieldNumShards: sh.NumShards,
		shared.FieldMinShards: sh.MinShards,
		shared.FieldMaxShards: sh.MaxShards,
	}
}
