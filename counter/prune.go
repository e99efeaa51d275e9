package counter

import (
	"context"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Bounds of PruneHourBuckets.
const (
	prunePeriod       = 24 * time.Hour // a pass is due once a day
	maxHoursPerPass   = 31 * 24
	maxWritesPerBatch = 400 // under Firestore's 500 per commit
)

// Pruner deletes hour buckets older than Options.HourBucketsKept.
type Pruner struct {
	sh              *shards
	hourBucketsKept time.Duration
}

// HourBucketsDue reports whether PruneHourBuckets is due for counter document snap at now.
func (s *Pruner) HourBucketsDue(snap *firestore.DocumentSnapshot, now time.Time) bool {
	if s.hourBucketsKept <= 0 || !slices.Contains(windowsOf(snap.Data()), WindowHour) {
		return false
	}
	return !keptFrom(snap).After(s.keepHoursFrom(now).Add(-prunePeriod))
}

// PruneHourBuckets deletes up to maxHoursPerPass of counter id's hour buckets older than
// Options.HourBucketsKept, and returns how many (0 for a missing counter).
func (s *Pruner) PruneHourBuckets(ctx context.Context, id string, now time.Time) (int, error) {
	if s.hourBucketsKept <= 0 {
		return 0, nil
	}
	counterRef := s.sh.schema.CounterRef(s.sh.client, id)
	snap, err := counterRef.Get(ctx)
	switch {
	case status.Code(err) == codes.NotFound:
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("prune hours of %q: read counter: %w", id, err)
	}
	from, to := keptFrom(snap), s.keepHoursFrom(now)
	if !from.Before(to) {
		return 0, nil
	}
	if limit := from.Add(maxHoursPerPass * time.Hour); limit.Before(to) {
		to = limit
	}
	var deletes []firestore.Update
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		deletes = append(deletes, firestore.Update{FieldPath: bucketPath(WindowHour, Bucket(WindowHour, h)), Value: firestore.Delete})
	}
	shards, err := s.sh.schema.ShardsRef(s.sh.client, id).Select().Documents(ctx).GetAll()
	if err != nil {
		return 0, fmt.Errorf("prune hours of %q: list shards: %w", id, err)
	}
	writes := make([]op, 0, len(shards)+1)
	for _, shard := range shards {
		writes = append(writes, op{kind: opUpdate, ref: shard.Ref, updates: deletes})
	}
	// Last, once every shard is pruned.
	writes = append(writes, op{kind: opUpdate, ref: counterRef, updates: []firestore.Update{{Path: shared.FieldHoursKeptFrom, Value: to}}})
	for batch := range slices.Chunk(writes, maxWritesPerBatch) {
		if err := s.sh.commitOps(ctx, batch); err != nil {
			return 0, fmt.Errorf("prune hours of %q before %s: %w", id, Bucket(WindowHour, to), err)
		}
	}
	return len(deletes), nil
}

// keepHoursFrom is the oldest hour kept at now.
func (s *Pruner) keepHoursFrom(now time.Time) time.Time {
	return now.Add(-s.hourBucketsKept).UTC().Truncate(time.Hour)
}

// keptFrom is the oldest hour snap's shards may hold.
func keptFrom(snap *firestore.DocumentSnapshot) time.Time {
	if t, ok := snap.Data()[shared.FieldHoursKeptFrom].(time.Time); ok {
		return t.UTC()
	}
	return snap.CreateTime.UTC().Truncate(time.Hour)
}
