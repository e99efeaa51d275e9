package counter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// ErrNotFound is returned for a counter that has never been configured or incremented.
var ErrNotFound = errors.New("counter not found")

// Store reads and writes sharded counters in one Firestore database.
type Store struct {
	client           *firestore.Client
	schema           shared.Schema
	defaultNumShards int
	shardCounts      *shardCountCache
	pickShard        func(numShards int) int
	dedupeTTL        time.Duration
}

// Options tune a Store.
type Options struct {
	// DefaultNumShards is the shard count of a counter created by its first increment.
	DefaultNumShards int
	// ShardCountCacheTTL is how long a counter's shard count is trusted without reading it again.
	ShardCountCacheTTL time.Duration
	// DedupeTTL is how long ApplyOnce remembers a key: its dedupe record expires after it.
	DedupeTTL time.Duration
}

// NewStore returns a Store over client with the collections named by schema.
func NewStore(client *firestore.Client, schema shared.Schema, opts Options) *Store {
	return &Store{
		client:           client,
		schema:           schema,
		defaultNumShards: opts.DefaultNumShards,
		shardCounts:      newShardCountCache(opts.ShardCountCacheTTL, time.Now),
		pickShard:        rand.IntN,
		dedupeTTL:        opts.DedupeTTL,
	}
}

// Increment adds delta to one random shard of counter id and returns the shard it chose. A counter
// that does not exist yet is created with the default shard count in the same atomic write. The
// shard count comes from a per-instance cache, so a warm increment is exactly one document write.
func (s *Store) Increment(ctx context.Context, id string, delta int64) (shard int, err error) {
	numShards, err := s.numShards(ctx, id)
	if errors.Is(err, ErrNotFound) {
		shard, err = s.createByIncrement(ctx, id, delta)
		if status.Code(err) != codes.AlreadyExists {
			return shard, err
		}
		// Another request created it first: increment it like any existing counter.
		numShards, err = s.numShards(ctx, id)
	}
	if err != nil {
		return 0, err
	}
	shard = s.pickShard(numShards)
	if _, err := s.schema.ShardRef(s.client, id, shard).Set(ctx, shardIncrement(delta), firestore.MergeAll); err != nil {
		return 0, fmt.Errorf("increment shard %d of counter %q: %w", shard, id, err)
	}
	return shard, nil
}

// shardIncrement is the server-side increment of a shard; it creates the shard document if needed.
func shardIncrement(delta int64) map[string]any {
	return map[string]any{shared.FieldCount: firestore.Increment(delta)}
}

// createByIncrement creates counter id with the default shard count and applies its first increment,
// atomically. It fails with codes.AlreadyExists when the counter exists.
func (s *Store) createByIncrement(ctx context.Context, id string, delta int64) (int, error) {
	shard := s.pickShard(s.defaultNumShards)
	err := s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		if err := tx.Create(s.schema.CounterRef(s.client, id), map[string]any{shared.FieldNumShards: s.defaultNumShards}); err != nil {
			return err
		}
		return tx.Set(s.schema.ShardRef(s.client, id, shard), shardIncrement(delta), firestore.MergeAll)
	})
	if err != nil {
		return 0, fmt.Errorf("create counter %q by its first increment: %w", id, err)
	}
	s.shardCounts.put(id, s.defaultNumShards)
	return shard, nil
}

// numShards returns the shard count of counter id, from the cache when it is fresh.
func (s *Store) numShards(ctx context.Context, id string) (int, error) {
	if n, ok := s.shardCounts.get(id); ok {
		return n, nil
	}
	snap, err := s.schema.CounterRef(s.client, id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("read counter %q: %w", id, err)
	}
	n, err := numShardsOf(snap)
	if err != nil {
		return 0, err
	}
	s.shardCounts.put(id, n)
	return n, nil
}

func numShardsOf(snap *firestore.DocumentSnapshot) (int, error) {
	v, err := snap.DataAt(shared.FieldNumShards)
	n, ok := v.(int64)
	if err != nil || !ok || n < shared.MinNumShards || n > shared.MaxNumShards {
		return 0, fmt.Errorf("counter %q: %s is %v, want an integer from %d to %d",
			snap.Ref.ID, shared.FieldNumShards, v, shared.MinNumShards, shared.MaxNumShards)
	}
	return int(n), nil
}
