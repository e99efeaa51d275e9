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

// Lifecycle configures, reshards, resets, deletes and restores counters.
type Lifecycle struct {
	*shards
	fences *fences
}

// Delete removes counter id's document, shards, member fences and roll-up in one transaction,
// leaving members and per-caller totals to PurgeMembers; ErrNotFound without a counter document.
// A racing increment is ordered wholly before it or after it (see Restore).
func (s *Lifecycle) Delete(ctx context.Context, id string) error {
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
		if err := s.fences.drop(tx, locked.counter); err != nil {
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
	s.configs.forget(id)
	s.touches.forget(id)
	return nil
}

// Reset zeroes counter id's shards and window buckets and starts a new member epoch in one
// transaction, returning the value discarded; ErrNotFound without a counter document. A racing
// increment is ordered wholly before it (discarded) or after it (counted).
func (s *Lifecycle) Reset(ctx context.Context, id string) (discarded int64, err error) {
	err = s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		discarded = 0
		locked, err := s.lockCounter(tx, id)
		if err != nil {
			return err
		}
		if _, declared := locked.counter.Data()[shared.FieldSource]; declared {
			return fmt.Errorf("reset counter %q: %w", id, ErrDeclared)
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
		if err := s.fences.drop(tx, locked.counter); err != nil {
			return err
		}
		// A new member epoch: old members count again; old plans fail on its fences.
		random := rand.Text()
		if locked.counter.Data()[shared.FieldDistinct] == true {
			shape, err := s.shapeOf(locked.counter)
			if err != nil {
				return err
			}
			if err := s.fences.set(tx, id, epochOf(locked.counter, random), shape.NumShards); err != nil {
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
	s.configs.forget(id) // its member epoch changed
	return discarded, nil
}

// lockedCounter is what lockCounter read: every document of a counter that holds part of its value.
type lockedCounter struct {
	counter *firestore.DocumentSnapshot
	shards  []*firestore.DocumentSnapshot
}

// lockCounter reads counter id's document and shards in tx, ordering its writes against every
// increment; ErrNotFound when the counter document is missing.
func (s *Lifecycle) lockCounter(tx *firestore.Transaction, id string) (lockedCounter, error) {
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

// Restore creates counter id's missing counter document, for shards written after a Delete.
func (s *Lifecycle) Restore(ctx context.Context, id string) error {
	_, err := s.schema.CounterRef(s.client, id).Create(ctx, newCounterFields(s.defaultNumShards, shared.UnixMinute(s.clock.Now())))
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("restore counter %q: %w", id, err)
	}
	return nil
}
