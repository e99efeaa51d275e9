package counter

import (
	"context"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Configuration is the outcome of Configure.
type Configuration struct {
	// NumShards is the counter's shard count now.
	NumShards int
	// PreviousNumShards is its shard count before, 0 when Created.
	PreviousNumShards int
	// Created is true when the counter did not exist.
	Created bool
}

// Configure creates counter id with numShards zeroed shards, or changes the shard count of an
// existing counter. Either is one atomic write. Changing the shard count never changes the value,
// even while increments are arriving: the value is the sum over every shard document, so shards
// beyond a lowered count keep counting, and instances with a stale cached count still write to
// documents that are summed.
func (s *Store) Configure(ctx context.Context, id string, numShards int) (Configuration, error) {
	var cfg Configuration
	counterRef := s.schema.CounterRef(s.client, id)
	err := s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		cfg = Configuration{NumShards: numShards}
		snap, err := tx.Get(counterRef)
		switch {
		case status.Code(err) == codes.NotFound:
			cfg.Created = true
			if err := tx.Create(counterRef, map[string]any{shared.FieldNumShards: numShards}); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			if cfg.PreviousNumShards, err = numShardsOf(snap); err != nil {
				return err
			}
			if err := tx.Update(counterRef, []firestore.Update{{Path: shared.FieldNumShards, Value: numShards}}); err != nil {
				return err
			}
		}
		// Zeroed shards exist for every shard ID in use, as in the guide, so that its clients, which
		// update (not set) a random shard, keep working. Increment(0) never overwrites a count.
		for n := cfg.PreviousNumShards; n < numShards; n++ {
			if err := tx.Set(s.schema.ShardRef(s.client, id, n), zeroShard(), firestore.MergeAll); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Configuration{}, fmt.Errorf("configure counter %q with %d shards: %w", id, numShards, err)
	}
	s.shardCounts.put(id, numShards)
	return cfg, nil
}

// zeroShard makes a shard exist without changing its count or its write count.
func zeroShard() map[string]any {
	return map[string]any{shared.FieldCount: firestore.Increment(0), shared.FieldWrites: firestore.Increment(0)}
}
