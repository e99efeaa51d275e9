package counter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
)

// Collection counters' commit primitives: package sources keeps their ledger and base and commits
// their changes in transactions of its own, adding the shard writes planned here.

// ErrSourceCounter refuses a plain increment of a collection counter: only its documents change it.
var ErrSourceCounter = errors.New("the counter counts documents (a collection counter): write or delete its documents instead")

// ErrDeclared refuses an operator action that would make a collection counter differ from its
// documents, or change what its declaration owns: reset, windows, distinct, group.
var ErrDeclared = errors.New("the counter counts documents (a collection counter): its value follows its documents and its declaration sets its windows and group")

// ErrNoCollectionCounter: the counter is missing, or is no collection counter, as this instance has
// its configuration cached.
var ErrNoCollectionCounter = errors.New("no collection counter of that ID is configured")

// Collections plans collection counters' shard writes for package sources' transactions, and
// creates those counters.
type Collections struct {
	sh        *shards
	lifecycle *Lifecycle
}

// TimedDelta is a part of a change: Delta, counted in the window buckets holding At.
type TimedDelta struct {
	At    time.Time
	Delta int64
}

// ShardWrite is a planned write to shards of a collection counter, for a transaction of the
// caller's (AddTo); call Committed once that transaction commits.
type ShardWrite struct {
	sh *shards
	w  shardWrite
	// more are further shards' writes (Spread); counterUpdates join the counter document's stamp.
	more           []shardWrite
	counterUpdates []firestore.Update
	noShard        bool
	allTimeOnly    bool // a correction: no window bucket counts it
}

// PlanChanges plans the shard write of collection counter id's changes; ErrNoCollectionCounter,
// ErrDeltaOverflow. stamped is the counter's touched_minute as the caller's transaction read it;
// verify stamps the counter, settling whether it exists.
func (s *Collections) PlanChanges(ctx context.Context, id string, deltas []TimedDelta, stamped int64, verify bool) (*ShardWrite, error) {
	w, err := s.sh.planShard(ctx, id, deltas[0].Delta, deltas[0].At, verify, true)
	if err != nil {
		return nil, err
	}
	for _, d := range deltas[1:] {
		if err := w.add(d.Delta, d.At); err != nil {
			return nil, err
		}
	}
	if w.stamp && !s.sh.requireExisting && stamped >= w.minute {
		w.stamp = false // another instance stamped this minute: no write to the counter document
	}
	return &ShardWrite{sh: s.sh, w: w}, nil
}

// PlanCorrection plans a base correction of collection counter id: delta in its all-time value
// only, stamping nothing.
func (s *Collections) PlanCorrection(ctx context.Context, id string, delta int64, at time.Time) (*ShardWrite, error) {
	w, err := s.sh.planShard(ctx, id, delta, at, false, true)
	if err != nil {
		return nil, err
	}
	w.parts, w.stamp = nil, false
	return &ShardWrite{sh: s.sh, w: w, allTimeOnly: true}, nil
}

// Shard is the (first) shard w writes.
func (w *ShardWrite) Shard() int { return w.w.shard }

// Spread replaces w's deltas by byShard's: each shard gets its own; none leaves only the stamp.
// The caller keeps every shard within int64 (the increments saturate).
func (w *ShardWrite) Spread(byShard map[int][]TimedDelta) error {
	w.more, w.noShard = nil, len(byShard) == 0
	first := true
	for _, shard := range slices.Sorted(maps.Keys(byShard)) {
		sw := shardWrite{counter: w.w.counter, shard: shard, windows: w.w.windows}
		for _, d := range byShard[shard] {
			if err := sw.add(d.Delta, d.At); err != nil {
				return fmt.Errorf("spread the changes of counter %q: %w", w.w.counter, err)
			}
		}
		if w.allTimeOnly {
			sw.parts = nil
		}
		if first {
			w.w.shard, w.w.delta, w.w.parts = shard, sw.delta, sw.parts
			first = false
			continue
		}
		w.more = append(w.more, sw)
	}
	return nil
}

// UpdateCounter adds updates of the counter document to w, beside its stamp.
func (w *ShardWrite) UpdateCounter(updates ...firestore.Update) {
	w.counterUpdates = append(w.counterUpdates, updates...)
}

// AddTo adds w's writes to tx.
func (w *ShardWrite) AddTo(tx *firestore.Transaction) error {
	ops := w.sh.shardWriteOps(w.w)
	if w.noShard {
		ops = ops[:len(ops)-1]
	}
	if len(w.counterUpdates) > 0 {
		ops = w.withCounterUpdates(ops)
	}
	for _, sw := range w.more {
		ops = append(ops, op{kind: opMerge, ref: w.sh.schema.ShardRef(w.sh.client, sw.counter, sw.shard), data: shardIncrement(sw)})
	}
	return addToTransaction(tx, ops)
}

// withCounterUpdates merges w's counter updates into the stamp among ops, or adds an update.
func (w *ShardWrite) withCounterUpdates(ops []op) []op {
	ref := w.sh.schema.CounterRef(w.sh.client, w.w.counter)
	for i, o := range ops {
		if o.kind == opUpdate && o.ref.Path == ref.Path {
			ops[i].updates = append(slices.Clip(o.updates), w.counterUpdates...)
			return ops
		}
	}
	return append(ops, op{kind: opUpdate, ref: ref, updates: w.counterUpdates})
}

// ShardsRef is collection counter id's shards: one document per shard, named by its index.
func (s *Collections) ShardsRef(id string) *firestore.CollectionRef {
	return s.sh.schema.ShardsRef(s.sh.client, id)
}

// ShardRef is shard n of collection counter id.
func (s *Collections) ShardRef(id string, n int) *firestore.DocumentRef {
	return s.sh.schema.ShardRef(s.sh.client, id, n)
}

// Committed records that the transaction holding w committed.
func (w *ShardWrite) Committed() { w.sh.remember([]shardWrite{w.w}) }

// CreateCollectionCounter configures a missing counter id with st as a collection counter of the
// declaration named source.
func (s *Collections) CreateCollectionCounter(ctx context.Context, id string, st Settings, source string) error {
	st.source = source
	if _, err := s.lifecycle.Configure(ctx, id, st); err != nil {
		return fmt.Errorf("configure collection counter %q: %w", id, err)
	}
	return nil
}

// Reconfigured drops this instance's cached configuration of counter id, which another write changed.
func (s *Collections) Reconfigured(id string) { s.sh.configs.forget(id) }
