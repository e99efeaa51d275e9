package counter

import (
	"errors"
	"math/rand/v2"
	"time"

	"cloud.google.com/go/firestore"
	"golang.org/x/sync/singleflight"

	"github.com/shardcount/counters/gate"
	"github.com/shardcount/counters/shared"
)

// ErrNotFound is returned for a counter that has never been configured or incremented.
var ErrNotFound = errors.New("counter not found")

// Store reads and writes sharded counters in one Firestore database. It is safe for concurrent use.
type Store struct {
	documents
	clock       shared.Clock
	shardCounts *shardCountCache
	// requireExisting and hourBucketsKept are Options'.
	requireExisting bool
	hourBucketsKept time.Duration
	pickShard       func(id string, numShards int) int // a shardDealer's pick in production
	touches         *touchStamps
	groups          *groupCommitter // nil: one commit per request
	changes         *groupCommitter // nil: changes commit as increments do
	ledgerPart      int             // this Store's part of ledger seconds
	plans           planStore
	life            gate.Gate          // admits increments until Close
	raises          singleflight.Group // coalesces raiseFences per counter and epoch
}

// Options tune a Store.
type Options struct {
	DefaultNumShards   int           // of a counter created by its first increment
	ShardCountCacheTTL time.Duration // how long a cached configuration is trusted
	// GroupCommitInterval, when positive, merges a counter's concurrent increments into one shard
	// write at most once per interval, the most an increment waits; zero writes each alone.
	GroupCommitInterval time.Duration
	// ChangeCommitInterval, when positive, commits a collection counter's changes in one transaction
	// at most once per interval.
	ChangeCommitInterval time.Duration
	DedupeTTL            time.Duration // how long a key is remembered
	// RequireExisting makes increments of a missing counter fail with ErrNotFound and write nothing,
	// also when racing its Delete: only Configure creates counters.
	RequireExisting bool
	HourBucketsKept time.Duration // PruneHourBuckets deletes older hour buckets; zero keeps them
	Clock           shared.Clock  // labels window buckets; nil: the system clock
}

// NewStore returns a Store over client with the collections named by schema.
func NewStore(client *firestore.Client, schema shared.Schema, opts Options) *Store {
	var clock shared.Clock = shared.SystemClock{}
	if opts.Clock != nil {
		clock = opts.Clock
	}
	docs := documents{client: client, schema: schema, defaultNumShards: opts.DefaultNumShards, dedupeTTL: opts.DedupeTTL}
	s := &Store{
		documents:       docs,
		clock:           clock,
		shardCounts:     newShardCountCache(opts.ShardCountCacheTTL, clock),
		requireExisting: opts.RequireExisting,
		hourBucketsKept: opts.HourBucketsKept,
		pickShard:       newShardDealer().pick,
		touches:         newTouchStamps(clock),
		plans:           &firestorePlans{documents: docs},
		ledgerPart:      rand.IntN(ledgerParts),
	}
	if opts.GroupCommitInterval > 0 {
		s.groups = newGroupCommitter(opts.GroupCommitInterval, clock, s.commitBatch)
	}
	if opts.ChangeCommitInterval > 0 {
		s.changes = newGroupCommitter(opts.ChangeCommitInterval, clock, s.commitBatch)
	}
	return s
}
