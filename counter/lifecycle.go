package counter

import (
	"context"
	"crypto/rand"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Delete removes counter id's counter document, every shard document, its member fences (so no
// member increment planned before can apply) and its roll-up in one transaction; its member
// documents and per-caller totals no longer count and are left to PurgeMembers. It fails with
// ErrNotFound when there is no counter document. An increment racing it is
// ordered wholly before it (and deleted) or after it: the counter then comes back holding exactly the
// increments acknowledged after the delete (see Restore), and callers' totals start from 0.
func (s *Store) Delete(ctx context.Context, id string) error {
	err := s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		locked, err := s.lockCounter(tx, id)
		if err != nil {
			return err
		}
		for _, doc := range locked.shards {
			if err := tx.Delete(doc.Ref); err != nil {
				return err
			}
		}
		if err := s.dropFences(tx, locked.counter); err != nil {
			return err
		}
		if err := tx.Delete(s.schema.RollupRef(s.client, id)); err != nil {
			return err
		}
		return tx.Delete(s.schema.CounterRef(s.client, id))
	})
	if err != nil {
		return fmt.Errorf("delete counter %q: %w", id, err)
	}
	s.shardCounts.forget(id)
	s.touches.forget(id)
	return nil
}

// Reset sets every shard's count of counter id to 0 and removes its window buckets (their writes
// stay) and starts a new member epoch (distinct members and per-caller totals count afresh; the old
// epoch's fences are replaced by the new one's; shared.FieldMembersSince says when it began, for
// PurgeMembers) in one transaction, stamps the counter's touched_minute when a count changed (so the sweep
// sees it), and returns the value it discarded; it fails with ErrNotFound when there is no counter
// document. An increment racing it is ordered wholly before it (discarded) or after it (counted).
func (s *Store) Reset(ctx context.Context, id string) (discarded int64, err error) {
	err = s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		discarded = 0
		locked, err := s.lockCounter(tx, id)
		if err != nil {
			return err
		}
		changed := false
		for _, shard := range locked.shards {
			count, ok := int64Field(shard, shared.FieldCount)
			if !ok {
				return fmt.Errorf("shard %s: count is not an integer", shard.Ref.ID)
			}
			_, hasBuckets := shard.Data()[shared.FieldBuckets]
			if count == 0 && !hasBuckets {
				continue
			}
			discarded += count
			changed = true
			updates := []firestore.Update{{Path: shared.FieldCount, Value: 0}}
			if hasBuckets {
				updates = append(updates, firestore.Update{Path: shared.FieldBuckets, Value: firestore.Delete})
			}
			if err := tx.Update(shard.Ref, updates); err != nil {
				return err
			}
		}
		if err := s.dropFences(tx, locked.counter); err != nil {
			return err
		}
		// A new member epoch: distinct members counted before count again, and commits planned in
		// the old one fail on its fences.
		random := rand.Text()
		if locked.counter.Data()[shared.FieldDistinct] == true {
			shape, err := s.ShapeOf(locked.counter)
			if err != nil {
				return err
			}
			if err := s.setFences(tx, id, epochOf(locked.counter, random), shape.NumShards); err != nil {
				return err
			}
		}
		updates := []firestore.Update{{Path: shared.FieldMembersEpoch, Value: random}, {Path: shared.FieldMembersSince, Value: firestore.ServerTimestamp}}
		if changed {
			updates = append(updates, touchUpdate(shared.UnixMinute(s.clock.Now()))...)
		}
		return tx.Update(s.schema.CounterRef(s.client, id), updates)
	})
	if err != nil {
		return 0, fmt.Errorf("reset counter %q: %w", id, err)
	}
	s.shardCounts.forget(id) // its member epoch changed
	return discarded, nil
}

// lockedCounter is what lockCounter read: every document of a counter that holds part of its value.
type lockedCounter struct {
	counter *firestore.DocumentSnapshot
	shards  []*firestore.DocumentSnapshot
}

// lockCounter reads counter id's document and every shard document within tx, so the transaction's
// writes are ordered against every increment (a limited one reads the counter document too);
// ErrNotFound when the counter document is missing.
func (s *Store) lockCounter(tx *firestore.Transaction, id string) (lockedCounter, error) {
	counterRef := s.schema.CounterRef(s.client, id)
	var locked lockedCounter
	var err error
	if locked.counter, err = tx.Get(counterRef); status.Code(err) == codes.NotFound {
		return lockedCounter{}, ErrNotFound
	} else if err != nil {
		return lockedCounter{}, err
	}
	if locked.shards, err = tx.Documents(s.schema.ShardsRef(s.client, id)).GetAll(); err != nil {
		return lockedCounter{}, err
	}
	return locked, nil
}

// Restore creates counter id's counter document with the default shard count if it is missing; the
// roll-up calls it for shards found without one (increments acknowledged after a Delete).
func (s *Store) Restore(ctx context.Context, id string) error {
	_, err := s.schema.CounterRef(s.client, id).Create(ctx, newCounterFields(s.defaultNumShards, shared.UnixMinute(s.clock.Now())))
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("restore counter %q: %w", id, err)
	}
	return nil
}
