package counter

import (
	"context"
	"fmt"
	"math"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Value is a counter's exact value and shape.
type Value struct {
	// Count is the exact sum over every shard document.
	Count int64
	// NumShards is the configured shard count.
	NumShards int
}

// Value reads counter id's configuration and its exact value: one document read and one aggregation
// query (one read per 1,000 shards), never one read per shard.
func (s *Store) Value(ctx context.Context, id string) (Value, error) {
	snap, err := s.schema.CounterRef(s.client, id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return Value{}, ErrNotFound
	}
	if err != nil {
		return Value{}, fmt.Errorf("read counter %q: %w", id, err)
	}
	numShards, err := numShardsOf(snap)
	if err != nil {
		return Value{}, err
	}
	sum, err := s.Sum(ctx, id)
	if err != nil {
		return Value{}, err
	}
	return Value{Count: sum, NumShards: numShards}, nil
}

// sumAlias names the aggregation result.
const sumAlias = "total"

// Sum is the exact value of counter id: the sum of the count field over every document of its shards
// subcollection, in one aggregation query. A counter without shards sums to 0.
func (s *Store) Sum(ctx context.Context, id string) (int64, error) {
	res, err := s.schema.ShardsRef(s.client, id).NewAggregationQuery().WithSum(shared.FieldCount, sumAlias).Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("sum shards of counter %q: %w", id, err)
	}
	v, ok := res[sumAlias].(*firestorepb.Value)
	if !ok {
		return 0, fmt.Errorf("sum shards of counter %q: no %q in aggregation result", id, sumAlias)
	}
	switch x := v.GetValueType().(type) {
	case *firestorepb.Value_IntegerValue:
		return x.IntegerValue, nil
	case *firestorepb.Value_DoubleValue:
		// Firestore sums integers as a double only when the sum overflows int64 or a shard holds a
		// non-integer (written by hand): both make the exact value unrepresentable.
		if x.DoubleValue == math.Trunc(x.DoubleValue) && math.Abs(x.DoubleValue) < 1<<63 {
			return int64(x.DoubleValue), nil
		}
		return 0, fmt.Errorf("sum shards of counter %q: %v is not an int64", id, x.DoubleValue)
	}
	return 0, fmt.Errorf("sum shards of counter %q: unexpected aggregation value %v", id, v)
}
