package counter

import (
	"errors"
	"time"

	"github.com/shardcount/counters/shared/clock"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/shared"
)

// ErrNotFound is a counter never configured or incremented.
var ErrNotFound = errors.New("counter not found")

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

// Store is one database's counters, as the parts its callers hold; each part is safe for
// concurrent use, and all share one cache of counters' configuration.
type Store struct {
	Increments  *Increments  // increments, and Close
	Members     *Members     // distinct members: purge and move
	Lifecycle   *Lifecycle   // configure, reshard, reset, delete, restore
	Collections *Collections // collection counters' commit primitives
	Reader      *Reader      // values, sums and window buckets
	Pruner      *Pruner      // hour buckets past Options.HourBucketsKept
}

// NewStore returns the parts of the counters in client's database, with the collections named by
// schema.
func NewStore(client *firestore.Client, schema shared.Schema, opts Options) *Store {
	var clock clock.Clock = clock.System{}
	if opts.Clock != nil {
		clock = opts.Clock
	}
	docs := documents{client: client, schema: schema, defaultNumShards: opts.DefaultNumShards, dedupeTTL: opts.DedupeTTL}
	sh := &shards{
		documents:       docs,
		clock:           clock,
		configs:         newConfigCache(opts.ShardCountCacheTTL, clock),
		requireExisting: opts.RequireExisting,
		pickShard:       newShardDealer().pick,
		touches:         newTouchStamps(clock),
	}
	fences := &fences{sh: sh}
	inc := newIncrements(sh, &firestorePlans{documents: docs}, opts.GroupCommitInterval, fences)
	life := &Lifecycle{shards: sh, fences: fences}
	return &Store{
		Increments:  inc,
		Members:     inc.members,
		Lifecycle:   life,
		Collections: &Collections{sh: sh, lifecycle: life},
		Reader:      &Reader{sh: sh},
		Pruner:      &Pruner{sh: sh, hourBucketsKept: opts.HourBucketsKept},
	}
}
