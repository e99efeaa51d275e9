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

// maxAbortedAttempts bounds how often one shard write is sent when the database aborts it.
const maxAbortedAttempts = 3

// ErrNotFound is returned for a counter that has never been configured or incremented.
var ErrNotFound = errors.New("counter not found")

// Store reads and writes sharded counters in one Firestore database.
type Store struct {
	client           *firestore.Client
	schema           shared.Schema
	defaultNumShards int
	shardCounts      *shardCountCache
	pickShard        func(numShards int) int
	groups           *groupCommitter // nil: one write per increment
	dedupeTTL        time.Duration
	touches          *touchStamps
}

// Options tune a Store.
type Options struct {
	// DefaultNumShards is the shard count of a counter created by its first increment.
	DefaultNumShards int
	// ShardCountCacheTTL is how long a counter's shard count is trusted without reading it again.
	ShardCountCacheTTL time.Duration
	// GroupCommitInterval, when positive, merges the concurrent increments of a counter in this
	// instance into one shard write at most once per interval; it is also the most an increment
	// waits for company. Zero writes every increment on its own, as the Firebase guide does.
	GroupCommitInterval time.Duration
	// DedupeTTL is how long ApplyOnce remembers a key: its dedupe record expires after it.
	DedupeTTL time.Duration
}

// NewStore returns a Store over client with the collections named by schema.
func NewStore(client *firestore.Client, schema shared.Schema, opts Options) *Store {
	s := &Store{
		client:           client,
		schema:           schema,
		defaultNumShards: opts.DefaultNumShards,
		shardCounts:      newShardCountCache(opts.ShardCountCacheTTL, time.Now),
		pickShard:        rand.IntN,
		dedupeTTL:        opts.DedupeTTL,
		touches:          newTouchStamps(time.Now),
	}
	if opts.GroupCommitInterval > 0 {
		s.groups = newGroupCommitter(s, opts.GroupCommitInterval)
	}
	return s
}

// Increment adds delta to one shard of counter id and returns the shard it chose; it returns once
// the write holding the increment has committed. A counter that does not exist yet is created with
// the default shard count in the same atomic write. The shard count comes from a per-instance cache,
// so a warm increment costs no read.
//
// With group commit on (Options.GroupCommitInterval), concurrent increments of one counter in this
// instance share one shard write, at most one per interval; otherwise every increment is one write
// to a random shard, as in the Firebase guide.
func (s *Store) Increment(ctx context.Context, id string, delta int64) (shard int, err error) {
	if s.groups != nil {
		return s.groups.add(ctx, id, delta)
	}
	return s.writeIncrement(ctx, id, delta, s.pickShard)
}

// writeIncrement adds delta to shard pick(numShards) of counter id in one write, creating the
// counter if needed.
func (s *Store) writeIncrement(ctx context.Context, id string, delta int64, pick func(numShards int) int) (shard int, err error) {
	numShards, err := s.numShards(ctx, id)
	if errors.Is(err, ErrNotFound) {
		shard, err = s.createByIncrement(ctx, id, delta, pick)
		if status.Code(err) != codes.AlreadyExists {
			return shard, err
		}
		// Another request created it first: increment it like any existing counter.
		numShards, err = s.numShards(ctx, id)
	}
	if err != nil {
		return 0, err
	}
	shard = pick(numShards)
	ref := s.schema.ShardRef(s.client, id, shard)
	minute, stamp := s.touches.due(id)
	// An Aborted commit (lock contention) was not applied, so it is safe to send again; the client
	// library retries it only inside transactions.
	for attempt := 1; ; attempt++ {
		if stamp {
			batch := s.client.Batch()
			batch.Set(ref, shardIncrement(delta), firestore.MergeAll)
			batch.Set(s.schema.CounterRef(s.client, id), touchFields(minute), firestore.MergeAll)
			_, err = batch.Commit(ctx)
		} else {
			_, err = ref.Set(ctx, shardIncrement(delta), firestore.MergeAll)
		}
		if status.Code(err) != codes.Aborted || attempt == maxAbortedAttempts {
			break
		}
	}
	if err != nil {
		if stamp {
			s.touches.forget(id, minute)
		}
		return 0, fmt.Errorf("increment shard %d of counter %q: %w", shard, id, err)
	}
	return shard, nil
}

// shardIncrement is the server-side increment of a shard; it creates the shard document if needed.
// It also counts the write, so the roll-up learns the counter's write rate across every instance.
func shardIncrement(delta int64) map[string]any {
	return map[string]any{
		shared.FieldCount:  firestore.Increment(delta),
		shared.FieldWrites: firestore.Increment(1),
	}
}

// createByIncrement creates counter id with the default shard count and applies its first increment,
// atomically. It fails with codes.AlreadyExists when the counter exists.
func (s *Store) createByIncrement(ctx context.Context, id string, delta int64, pick func(numShards int) int) (int, error) {
	shard := pick(s.defaultNumShards)
	err := s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		if err := tx.Create(s.schema.CounterRef(s.client, id), s.newCounterFields()); err != nil {
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
	shape, err := s.ShapeOf(snap)
	if err != nil {
		return 0, err
	}
	s.shardCounts.put(id, shape.NumShards)
	return shape.NumShards, nil
}
