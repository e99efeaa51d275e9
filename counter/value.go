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
	// Count is the exact sum over every shard document.
	Count int64
	// NumShards is the configured shard count.
	NumShards int
}

// ErrUncountable marks a counter whose documents hold what no counter writes, so its value cannot be
// computed (a shard count of 1.5 from a console edit, a sum past int64, a num_shards of 0): no retry
// helps until an operator fixes the document.
var ErrUncountable = errors.New("the counter's value cannot be computed")

// UncountableError is Value's ErrUncountable: it names the shard to blame, when one is.
type UncountableError struct {
	// Counter is the counter ID.
	Counter string
	// Shard is the ID of the first shard document whose count is not an integer; "" when no one
	// shard is to blame (the sum of integers overflows int64).
	Shard string
	// Count is that shard's count, as stored.
	Count any
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

// Value reads counter id's configuration and its exact value: one document read and one aggregation
// query (one read per 1,000 shards), never one read per shard. A counter that cannot be summed costs
// one read per shard more and fails with an *UncountableError naming the shard.
func (s *Store) Value(ctx context.Context, id string) (Value, error) {
	snap, err := s.schema.CounterRef(s.client, id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return Value{}, ErrNotFound
	}
	if err != nil {
		return Value{}, fmt.Errorf("read counter %q: %w", id, err)
	}
	shape, err := s.ShapeOf(snap)
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

// blameShard finds why counter id cannot be summed: the first shard whose count is not an integer,
// or else an overflow. It reads every shard's count (one read per shard).
func (s *Store) blameShard(ctx context.Context, id string) error {
	shards, err := s.schema.ShardsRef(s.client, id).Select(shared.FieldCount).Documents(ctx).GetAll()
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
	// Count is the counter's exact value.
	Count int64
	// Writes is how many shard writes the counter has had (retired shards' writes are folded in).
	Writes int64
	// Shards is how many shard documents exist.
	Shards int64
}

// Sums are a counter's Totals and its counts in the buckets of its windows, all at one read time.
type Sums struct {
	Totals
	// Windows holds, by window, the count in the bucket holding the read time.
	Windows map[string]BucketCount
}

// Sum is the exact value of counter id: the sum of the count field over every document of its shards
// subcollection, in one aggregation query. A counter without shards sums to 0.
func (s *Store) Sum(ctx context.Context, id string) (int64, error) {
	res, err := s.schema.ShardsRef(s.client, id).NewAggregationQuery().WithSum(shared.FieldCount, sumAlias).Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("sum shards of counter %q: %w", id, err)
	}
	n, err := aggregateInt(res, sumAlias)
	if err != nil {
		return 0, fmt.Errorf("sum shards of counter %q: %w", id, err)
	}
	return n, nil
}

// SumsAt sums counter id's shards as they were at read time at, a time on Firestore's clock within
// the last hour (a snapshot's ReadTime; finer than a microsecond is truncated): its Totals and, for each of windows, its count in the bucket
// holding at. Its aggregation queries, two plus one per window (each one read per 1,000 shards), are
// sent together in one read-only transaction at that read time, so every sum counts exactly the
// shard writes committed at or before at. Totals take two queries because a query with several sums
// counts only the documents that hold every summed field, and a shard written without writes (by the
// guide's clients, by hand) must still count.
func (s *Store) SumsAt(ctx context.Context, id string, at time.Time, windows []string) (Sums, error) {
	type result struct {
		alias string
		dst   *int64
	}
	type query struct {
		aggregation *firestore.AggregationQuery
		results     []result
	}
	shards := s.schema.ShardsRef(s.client, id)
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
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
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
	}, firestore.ReadOnly, firestore.TransactionReadTime(at.Truncate(time.Microsecond))) // Firestore's precision: no commit falls between
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
