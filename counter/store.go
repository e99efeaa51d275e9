package counter

import (
	"errors"
	"time"

	"github.com/shardcount/counters/shared/clock"

	"cloud.google.com/go/firestore"
	"golang.org/x/sync/singleflight"

	"github.com/shardcount/counters/gate"
	"github.com/shardcount/counters/shared"
)

// ErrNotFound is a counter never configured or incremented.
var ErrNotFound = errors.New("counter not found")

// Store reads and writes sharded counters in one database; safe for concurrent use.
type Store struct {
	documents
	clock           clock.Clock
	configs         *configCache
	requireExisting bool
	hourBucketsKept time.Duration
	pickShard       func(id string, numShards int) int
	touches         *touchStamps
	groups          *groupCommitter // nil: one commit per request
	plans           planStore
	life            gate.Gate          // admits increments until Close
	raises          singleflight.Group // raiseFences per counter and epoch
}

// Options tune a Store.
type Options struct {
	DefaultNumShards   int
	ShardCountCacheTTL time.Duration // how long a cached configuration is trusted
	// GroupCommitInterval, when positive, merges a counter's concurrent increments into one write
	// per interval, the most an increment waits.
	GroupCommitInterval time.Duration
	DedupeTTL           time.Duration // how long a key is remembered
	// RequireExisting makes only Configure create counters; increments of a missing one, also racing
	// its Delete, fail with ErrNotFound.
	RequireExisting bool
	HourBucketsKept time.Duration // zero keeps hour buckets forever
	Clock           clock.Clock   // nil: the system clock
}

// NewStore returns a Store over client with the collections named by schema.
func NewStore(client *firestore.Client, schema shared.Schema, opts Options) *Store {
	var clock clock.Clock = clock.System{}
	if opts.Clock != nil {
		clock = opts.Clock
	}
	docs := documents{client: client, schema: schema, defaultNumShards: opts.DefaultNumShards, dedupeTTL: opts.DedupeTTL}
	s := &Store{
		documents:       docs,
		clock:           clock,
		configs:         newConfigCache(opts.ShardCountCacheTTL, clock),
		requireExisting: opts.RequireExisting,
		hourBucketsKept: opts.HourBucketsKept,
		pickShard:       newShardDealer().pick,
		touches:         newTouchStamps(clock),
		plans:           &firestorePlans{documents: docs},
	}
	if opts.GroupCommitInterval > 0 {
		s.groups = newGroupCommitter(opts.GroupCommitInterval, clock, s.commitBatch)
	}
	return s
}

// CounterRef is counter id's document.
func (s *Store) CounterRef(id string) *firestore.DocumentRef {
	return s.schema.CounterRef(s.client, id)
}

// RollupRef is counter id's roll-up document.
func (s *Store) RollupRef(id string) *firestore.DocumentRef {
	return s.schema.RollupRef(s.client, id)
}
