package counter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Value is a counter's exact value and shape.
type Value struct {
	Count     int64
	NumShards int
}

// ErrUncountable marks a counter whose documents hold what no counter writes: no retry helps until
// an operator fixes them.
var ErrUncountable = errors.New("the counter's value cannot be computed")

// UncountableError is Value's ErrUncountable, naming the shard to blame.
type UncountableError struct {
	Counter string
	Shard   string // the first shard not an integer; "" when the sum overflows
	Count   any    // that shard's count
}

func (e *UncountableError) Error() string {
	if e.Shard == "" {
		return fmt.Sprintf("counter %q cannot be summed: the sum of its shards' counts overflows int64", e.Counter)
	}
	return fmt.Sprintf("counter %q cannot be summed: shard %s holds count %v (%T), not an integer; fix or delete that shard document",
		e.Counter, e.Shard, e.Count, e.Count)
}

// Is makes an UncountableError match ErrUncountable.
func (e *UncountableError) Is(target error) bool { return target == ErrUncountable }

// Reader reads counters: values, sums, window buckets, documents.
type Reader struct {
	sh *shards
}

// CounterRef is counter id's document.
func (s *Reader) CounterRef(id string) *firestore.DocumentRef {
	return s.sh.schema.CounterRef(s.sh.client, id)
}

// RollupRef is counter id's roll-up document.
func (s *Reader) RollupRef(id string) *firestore.DocumentRef {
	return s.sh.schema.RollupRef(s.sh.client, id)
}

// ShapeOf reads a counter document's shape, with Settings' defaults for missing fields; a field out
// of range or not an integer is ErrUncountable.
func (s *Reader) ShapeOf(snap *firestore.DocumentSnapshot) (Shape, error) { return s.sh.shapeOf(snap) }

// Value reads counter id's exact value and shape; an *UncountableError when it cannot be summed.
func (s *Reader) Value(ctx context.Context, id string) (Value, error) {
	snap, err := s.sh.schema.CounterRef(s.sh.client, id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return Value{}, ErrNotFound
	}
	if err != nil {
		return Value{}, fmt.Errorf("read counter %q: %w", id, err)
	}
	shape, err := s.sh.shapeOf(snap)
	if err != nil {
		return Value{}, err
	}
	sum, err := s.Sum(ctx, id)
	if errors.Is(err, ErrUncountable) {
		return Value{}, s.blameShard(ctx, id)
	}
	if err != nil {
		return Value{}, err
	}
	return Value{Count: sum, NumShards: shape.NumShards}, nil
}

// blameShard reads every shard to say why counter id cannot be summed.
func (s *Reader) blameShard(ctx context.Context, id string) error {
	shards, err := s.sh.schema.ShardsRef(s.sh.client, id).Select(shared.FieldCount).Documents(ctx).GetAll()
	if err != nil {
		return fmt.Errorf("find the shard that stops counter %q from being summed: %w", id, err)
	}
	for _, shard := range shards {
		if count, ok := shard.Data()[shared.FieldCount]; ok {
			if _, isInt := count.(int64); !isInt {
				return &UncountableError{Counter: id, Shard: shard.Ref.ID, Count: count}
			}
		}
	}
	return &UncountableError{Counter: id}
}

// Aliases of the aggregation results.
const (
	sumAlias    = "total"
	writesAlias = "writes"
	shardsAlias = "shards"
)

// Totals are sums over every shard document of a counter.
type Totals struct {
	Count  int64
	Writes int64 // retired shards' included
	Shards int64
}

// Sums are a counter's Totals and window buckets at one read time.
type Sums struct {
	Totals
	Windows map[string]BucketCount
}

// Sum is counter id's exact value; 0 without shards.
func (s *Reader) Sum(ctx context.Context, id string) (int64, error) {
	res, err := s.sh.schema.ShardsRef(s.sh.client, id).NewAggregationQuery().WithSum(shared.FieldCount, sumAlias).Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("sum shards of counter %q: %w", id, err)
	}
	n, err := aggregateInt(res, sumAlias)
	if err != nil {
		return 0, fmt.Errorf("sum shards of counter %q: %w", id, err)
	}
	return n, nil
}

// SumsAt sums counter id's shards as of read time at (within the last hour): Totals and, per
// window, the bucket holding at. Count and Writes are separate queries: a multi-sum query skips
// shards lacking a field.
func (s *Reader) SumsAt(ctx context.Context, id string, at time.Time, windows []string) (Sums, error) {
	type result struct {
		alias string
		dst   *int64
	}
	type query struct {
		aggregation *firestore.AggregationQuery
		results     []result
	}
	shards := s.sh.schema.ShardsRef(s.sh.client, id)
	var sums Sums
	queries := []query{
		{shards.NewAggregationQuery().WithSum(shared.FieldCount, sumAlias).WithCount(shardsAlias), []result{{sumAlias, &sums.Count}, {shardsAlias, &sums.Shards}}},
		{shards.NewAggregationQuery().WithSum(shared.FieldWrites, writesAlias), []result{{writesAlias, &sums.Writes}}},
	}
	buckets := make([]BucketCount, len(windows))
	for i, w := range windows {
		buckets[i].Bucket = Bucket(w, at)
		queries = append(queries, query{shards.NewAggregationQuery().WithSumPath(bucketPath(w, buckets[i].Bucket), sumAlias), []result{{sumAlias, &buckets[i].Count}}})
	}
	err := s.sh.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		errs := make([]error, len(queries))
		var wg sync.WaitGroup
		for i, q := range queries {
			wg.Go(func() {
				res, err := q.aggregation.Transaction(tx).Get(ctx)
				for _, r := range q.results {
					if err == nil {
						*r.dst, err = aggregateInt(res, r.alias)
					}
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}, firestore.ReadOnly, firestore.TransactionReadTime(at.Truncate(time.Microsecond))) // Firestore's precision
	if err != nil {
		return Sums{}, fmt.Errorf("sum shards of counter %q at %s: %w", id, at.Format(time.RFC3339Nano), err)
	}
	sums.Windows = make(map[string]BucketCount, len(windows))
	for i, w := range windows {
		sums.Windows[w] = buckets[i]
	}
	return sums, nil
}

// aggregateInt reads one integer result of an aggregation query.
func aggregateInt(res firestore.AggregationResult, alias string) (int64, error) {
	v, ok := res[alias].(*firestorepb.Value)
	if !ok {
		return 0, fmt.Errorf("no %q in aggregation result", alias)
	}
	switch x := v.GetValueType().(type) {
	case *firestorepb.Value_IntegerValue:
		return x.IntegerValue, nil
	case *firestorepb.Value_DoubleValue:
		if x.DoubleValue == math.Trunc(x.DoubleValue) && math.Abs(x.DoubleValue) < 1<<63 {
			return int64(x.DoubleValue), nil
		}
		return 0, fmt.Errorf("%w: %s %v is not an int64", ErrUncountable, alias, x.DoubleValue)
	}
	return 0, fmt.Errorf("%w: unexpected aggregation value %v for %s", ErrUncountable, v, alias)
}
