package counter

import (
	"context"
	"errors"
	"fmt"
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
	// pickShard chooses the shard of every write of a counter (a shardDealer's pick in production).
	pickShard func(id string, numShards int) int
	groups    *groupCommitter // nil: one write per increment
	plans     planStore
	clock     shared.Clock
	touches   *touchStamps
	life      shared.Gate   // admits increments until Close
	dedupeTTL time.Duration // of the dedupe records a limited increment writes in its own transaction
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
	clock := shared.SystemClock{}
	s := &Store{
		client:           client,
		schema:           schema,
		defaultNumShards: opts.DefaultNumShards,
		shardCounts:      newShardCountCache(opts.ShardCountCacheTTL, clock),
		pickShard:        newShardDealer().pick,
		plans:            &firestorePlans{client: client, schema: schema, defaultNumShards: opts.DefaultNumShards, dedupeTTL: opts.DedupeTTL},
		clock:            clock,
		touches:          newTouchStamps(clock),
		dedupeTTL:        opts.DedupeTTL,
	}
	if opts.GroupCommitInterval > 0 {
		s.groups = newGroupCommitter(opts.GroupCommitInterval, clock, s.writeEntries)
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
// to a random shard, as in the Firebase guide. Either way the write is safe to retry (see write.go):
// an error wraps ErrNotApplied when the increment certainly was not applied, ErrOutcomeUnknown when
// nobody can tell.
func (s *Store) Increment(ctx context.Context, id string, delta int64) (shard int, err error) {
	r := s.write(ctx, entry{incs: []shared.Increment{{Counter: id, Delta: delta}}})
	if r.err != nil {
		return 0, fmt.Errorf("increment counter %q: %w", id, r.err)
	}
	return r.outcome.Applied[0].Shard, nil
}

// write applies e through its counter's group when group commit is on and e touches one counter, or
// in a commit of its own.
func (s *Store) write(ctx context.Context, e entry) entryResult {
	if !s.life.Enter() {
		return entryResult{err: notApplied(ErrClosed)}
	}
	defer s.life.Leave()
	if s.groups != nil && len(e.incs) == 1 {
		return s.groups.add(ctx, e.incs[0].Counter, e)
	}
	return s.writeEntries(ctx, []entry{e})[0]
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
