package counter

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/shared"
)

// Settings is what an operator asks of a counter; zero fields are not set. No shard fields keep the
// shape (new: DefaultNumShards, adaptive); NumShards alone pins; MinShards/MaxShards make it adaptive
// (unset: DefaultNumShards and wire.MaxNumShards), NumShards then the start, within them. Windows,
// Distinct and Group ("": none), when not nil, replace theirs for increments planned later (other
// Stores: within ShardCountCacheTTL); what was counted stays.
type Settings struct {
	NumShards, MinShards, MaxShards int
	Windows                         []string
	Distinct                        *bool
	Group                           *string
	// source, set by EstablishBase alone, makes the counter a collection counter of that declaration.
	source string
}

// shardFieldsSet reports whether st sets shard fields.
func (st Settings) shardFieldsSet() bool {
	return st.NumShards != 0 || st.MinShards != 0 || st.MaxShards != 0
}

// features are the fields st sets besides the shape, in minute.
func (st Settings) features(minute int64) map[string]any {
	f := map[string]any{}
	if st.Windows != nil {
		f[shared.FieldWindows] = st.Windows
	}
	if st.Distinct != nil {
		f[shared.FieldDistinct] = *st.Distinct
	}
	switch {
	case st.Group == nil:
	case *st.Group == "":
		f[shared.FieldGroup] = firestore.Delete
	default:
		f[shared.FieldGroup] = *st.Group
	}
	if st.Group != nil {
		f[shared.FieldTouchedMinute] = firestore.FieldTransformMaximum(minute)
	}
	if st.source != "" {
		f[shared.FieldSource] = st.source
	}
	return f
}

// shape is st applied to shape cur (existed false: a new counter).
func (st Settings) shape(cur Shape, existed bool, defaultNumShards int) (Shape, error) {
	if !st.shardFieldsSet() {
		if existed {
			return cur, nil
		}
		return Shape{NumShards: defaultNumShards, MinShards: defaultNumShards, MaxShards: wire.MaxNumShards}, nil
	}
	if st.MinShards == 0 && st.MaxShards == 0 {
		return Shape{NumShards: st.NumShards, MinShards: st.NumShards, MaxShards: st.NumShards}, nil
	}
	next := Shape{MinShards: st.MinShards, MaxShards: st.MaxShards}
	if next.MinShards == 0 {
		next.MinShards = min(defaultNumShards, next.MaxShards)
	}
	if next.MaxShards == 0 {
		next.MaxShards = wire.MaxNumShards
	}
	if next.MinShards > next.MaxShards {
		return Shape{}, &wire.FieldError{Field: "min_shards", Message: fmt.Sprintf("min_shards %d exceeds max_shards %d", next.MinShards, next.MaxShards)}
	}
	switch {
	case st.NumShards != 0 && next.Clamp(st.NumShards) != st.NumShards:
		return Shape{}, &wire.FieldError{Field: "num_shards", Message: fmt.Sprintf("num_shards %d is outside min_shards %d .. max_shards %d", st.NumShards, next.MinShards, next.MaxShards)}
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
	Shape                 // now
	PreviousNumShards int // 0 when Created
	Created           bool
	Windows           []string
	Distinct          bool
	Group             string // "" for none
}

// Configure creates or changes counter id in one transaction, then creates added shards at 0. It
// never changes the value or buckets, even while increments arrive.
func (s *Lifecycle) Configure(ctx context.Context, id string, st Settings) (Configuration, error) {
	if st.Group != nil && *st.Group != "" {
		if err := wire.ValidateGroup(*st.Group); err != nil {
			return Configuration{}, err
		}
	}
	for _, w := range st.Windows {
		if !ValidWindow(w) {
			return Configuration{}, &wire.FieldError{Field: "windows", Message: fmt.Sprintf("unknown window %q; windows are %v", w, Windows)}
		}
	}
	if st.Windows != nil {
		st.Windows = canonicalWindows(st.Windows)
	}
	res, err := s.reshape(ctx, id, func(cur Shape, existed bool) (Shape, error) {
		return st.shape(cur, existed, s.defaultNumShards)
	}, st.features(shared.UnixMinute(s.clock.Now())))
	if err == nil {
		err = s.createZeroShards(ctx, id, res.before.NumShards, res.after.NumShards)
	}
	if err == nil && res.distinct {
		if err = s.fences.raise(ctx, id, ""); errors.Is(err, errEpochMoved) {
			err = nil
		}
	}
	if err != nil {
		return Configuration{}, fmt.Errorf("configure counter %q with %+v: %w", id, st, err)
	}
	return Configuration{Shape: res.after, PreviousNumShards: res.before.NumShards, Created: !res.existed, Windows: res.windows, Distinct: res.distinct, Group: res.group}, nil
}
