package counter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/shared"
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
	// counts replace w's increment of one shard (SetCounts); counterUpdates join its stamp.
	counts         map[int]int64
	counterUpdates []firestore.Update
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

// SetCounts replaces w's shard write: each shard of counts gets that count (the caller read every
// shard in its transaction, so no increment races the write), and w's shard the window buckets of
// parts. The stamp and UpdateCounter's updates stay.
func (w *ShardWrite) SetCounts(counts map[int]int64, parts []TimedDelta) error {
	w.counts, w.w.delta, w.w.parts = counts, 0, nil
	if w.allTimeOnly {
		return nil
	}
	for _, p := range parts {
		if err := w.w.add(p.Delta, p.At); err != nil {
			return fmt.Errorf("the window buckets of counter %q: %w", w.w.counter, err)
		}
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
	if w.counts != nil {
		ops = append(ops[:len(ops)-1], w.countOps()...)
	}
	if len(w.counterUpdates) > 0 {
		ops = w.withCounterUpdates(ops)
	}
	return addToTransaction(tx, ops)
}

// countOps are the shard writes of SetCounts.
func (w *ShardWrite) countOps() []op {
	shards := slices.Sorted(maps.Keys(w.counts))
	buckets := bucketIncrements(w.w.windows, w.w.parts)
	if buckets != nil && !slices.Contains(shards, w.w.shard) {
		shards = append(shards, w.w.shard)
	}
	ops := make([]op, 0, len(shards))
	for _, shard := range shards {
		data := map[string]any{shared.FieldWrites: firestore.Increment(1)}
		if count, ok := w.counts[shard]; ok {
			data[shared.FieldCount] = count
		}
		if shard == w.w.shard && buckets != nil {
			data[shared.FieldBuckets] = buckets
		}
		ops = append(ops, op{kind: opMerge, ref: w.sh.schema.ShardRef(w.sh.client, w.w.counter, shard), data: data})
	}
	return ops
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
