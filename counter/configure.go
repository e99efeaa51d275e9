package counter

import (
	"context"
	"fmt"

	"github.com/shardcount/counters/shared"
)

// Settings is what an operator asks of a counter's shards; zero fields are not set.
//
//   - NumShards alone pins the count: bounds equal to it, adaptation leaves the counter alone.
//   - MinShards and/or MaxShards make the counter adaptive between them (an unset bound is
//     DefaultNumShards, or the count if lower, and shared.MaxNumShards); NumShards, if set too, is
//     the count to start from and must lie within them, else the count is clamped into them.
type Settings struct {
	NumShards, MinShards, MaxShards int
}

// shape is the shape the settings give a counter whose shape is cur (existed false: a new counter).
func (st Settings) shape(cur Shape, existed bool, defaultNumShards int) (Shape, error) {
	if st == (Settings{}) {
		return Shape{}, &shared.FieldError{Field: "num_shards", Message: "give num_shards, min_shards or max_shards"}
	}
	if st.MinShards == 0 && st.MaxShards == 0 {
		return Shape{NumShards: st.NumShards, MinShards: st.NumShards, MaxShards: st.NumShards}, nil
	}
	next := Shape{MinShards: st.MinShards, MaxShards: st.MaxShards}
	if next.MinShards == 0 {
		next.MinShards = min(defaultNumShards, next.MaxShards)
	}
	if next.MaxShards == 0 {
		next.MaxShards = shared.MaxNumShards
	}
	if next.MinShards > next.MaxShards {
		return Shape{}, &shared.FieldError{Field: "min_shards", Message: fmt.Sprintf("min_shards %d exceeds max_shards %d", next.MinShards, next.MaxShards)}
	}
	switch {
	case st.NumShards != 0 && next.Clamp(st.NumShards) != st.NumShards:
		return Shape{}, &shared.FieldError{Field: "num_shards", Message: fmt.Sprintf("num_shards %d is outside min_shards %d .. max_shards %d", st.NumShards, next.MinShards, next.MaxShards)}
	case st.NumShards != 0:
		next.NumShards = st.NumShards
	case existed:
		next.NumShards = next.Clamp(cur.NumShards)
	default:
		next.NumShards = next.Clamp(defaultNumShards)
	}
	return next, nil
}

// Configuration is the outcome of Configure.
type Configuration struct {
	// Shape is the counter's shape now.
	Shape
	// PreviousNumShards is its shard count before, 0 when Created.
	PreviousNumShards int
	// Created is true when the counter did not exist.
	Created bool
}

// Configure creates counter id, or changes its shape, in one transaction, then creates the shards it
// added with count 0. It never changes the counter's value, even while increments arrive.
func (s *Store) Configure(ctx context.Context, id string, st Settings) (Configuration, error) {
	res, err := s.reshape(ctx, id, func(cur Shape, existed bool) (Shape, error) {
		return st.shape(cur, existed, s.defaultNumShards)
	})
	if err == nil {
		err = s.createZeroShards(ctx, id, res.before.NumShards, res.after.NumShards)
	}
	if err != nil {
		return Configuration{}, fmt.Errorf("configure counter %q with %+v: %w", id, st, err)
	}
	return Configuration{Shape: res.after, PreviousNumShards: res.before.NumShards, Created: !res.existed}, nil
}
