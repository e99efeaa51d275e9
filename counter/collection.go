package counter

import (
	"context"
	"errors"
	"fmt"
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

// ShardWrite is a planned write to one shard of a collection counter, for a transaction of the
// caller's (AddTo); call Committed once that transaction commits.
type ShardWrite struct {
	sh *shards
	w  shardWrite
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
	return &ShardWrite{sh: s.sh, w: w}, nil
}

// Shard is the shard w writes.
func (w *ShardWrite) Shard() int { return w.w.shard }

// AddTo adds w's writes to tx.
func (w *ShardWrite) AddTo(tx *firestore.Transaction) error {
	return addToTransaction(tx, w.sh.shardWriteOps(w.w))
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
