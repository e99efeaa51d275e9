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
	// requireExisting: Options.RequireExisting.
	requireExisting bool
	// hourBucketsKept: Options.HourBucketsKept.
	hourBucketsKept time.Duration
	// pickShard chooses the shard of every write of a counter (a shardDealer's pick in production).
	pickShard func(id string, numShards int) int
	touches   *touchStamps
	groups    *groupCommitter // nil: one commit per request
	changes   *groupCommitter // nil: changes commit as increments do
	// ledgerPart is the part of a collection counter's ledger seconds this Store writes.
	ledgerPart int
	plans      planStore
	life       gate.Gate // admits increments until Close
	// raises coalesces concurrent raiseFences of one counter and epoch.
	raises singleflight.Group
}

// Options tune a Store.
type Options struct {
	// DefaultNumShards is the shard count of a counter created by its first increment.
	DefaultNumShards int
	// ShardCountCacheTTL is how long a counter's shard count is trusted without reading it again.
	ShardCountCacheTTL time.Duration
	// GroupCommitInterval, when positive, merges the concurrent increments of a counter in this Store
	// into one shard write at most once per interval, which is also the most an increment waits.
	// Zero writes every increment on its own.
	GroupCommitInterval time.Duration
	// ChangeCommitInterval, when positive, commits a collection counter's changes in this Store in
	// one transaction at most once per interval (zero: as increments are).
	ChangeCommitInterval time.Duration
	// DedupeTTL is how long a key is remembered: its dedupe record expires after it.
	DedupeTTL time.Duration
	// RequireExisting makes increments of a counter without a counter document fail with ErrNotFound
	// and write nothing, also when racing its Delete: only Configure creates counters.
	RequireExisting bool
	// HourBucketsKept is how long hourly buckets are kept: PruneHourBuckets deletes older ones. Zero
	// keeps them forever.
	HourBucketsKept time.Duration
	// Clock is the Store's time source (nil: the system clock): it labels the window buckets an
	// increment counts in, and Count's current bucket.
	Clock shared.Clock
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
