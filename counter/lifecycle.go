package counter

import (
	"context"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Delete removes counter id and everything it owns (its counter document, every shard document and
// its roll-up, so apps listening to the roll-up see it disappear) in one transaction; it fails with
// ErrNotFound when there is no counter document.
//
// An increment racing the delete is ordered before it or after it, never half: the transaction reads
// (and so locks) every shard document, so an increment of an existing shard waits for the delete
// and then lands on a fresh document. An increment ordered before the delete is deleted with the
// counter; one ordered after it (from an instance whose cached shard count is still warm) recreates
// its shard, and the roll-up that its shard write triggers recreates the counter document: the
// counter comes back holding exactly the increments acknowledged after the delete.
func (s *Store) Delete(ctx context.Context, id string) error {
	err := s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		shards, err := s.lockCounter(tx, id)
		if err != nil {
			return err
		}
		for _, shard := range shards {
			if err := tx.Delete(shard.Ref); err != nil {
				return err
			}
		}
		if err := tx.Delete(s.schema.RollupRef(s.client, id)); err != nil {
			return err
		}
		return tx.Delete(s.schema.CounterRef(s.client, id))
	})
	if err != nil {
		return fmt.Errorf("delete counter %q: %w", id, err)
	}
	// This instance's next increment creates the counter anew; other instances learn within
	// SHARD_COUNT_CACHE_TTL, and until then their increments restore it as said above.
	s.shardCounts.forget(id)
	s.touches.forget(id)
	return nil
}

// Reset sets counter id to zero in one transaction and returns the value it discarded; it fails with
// ErrNotFound when there is no counter document. Every shard's count becomes 0 and its writes stay
// (they measure load, not value). An increment racing the reset is ordered before it (and discarded
// with the value) or after it (and counted), as for Delete; the roll-up follows through its trigger.
func (s *Store) Reset(ctx context.Context, id string) (discarded int64, err error) {
	err = s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		discarded = 0
		shards, err := s.lockCounter(tx, id)
		if err != nil {
			return err
		}
		for _, shard := range shards {
			count, ok := int64Field(shard, shared.FieldCount)
			if !ok {
				return fmt.Errorf("shard %s: count is not an integer", shard.Ref.ID)
			}
			if count == 0 {
				continue
			}
			discarded += count
			if err := tx.Update(shard.Ref, []firestore.Update{{Path: shared.FieldCount, Value: 0}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reset counter %q: %w", id, err)
	}
	return discarded, nil
}

// lockCounter reads counter id's document and every shard document within tx, so the transaction's
// writes are ordered against every increment; ErrNotFound when the counter document is missing.
func (s *Store) lockCounter(tx *firestore.Transaction, id string) ([]*firestore.DocumentSnapshot, error) {
	if _, err := tx.Get(s.schema.CounterRef(s.client, id)); status.Code(err) == codes.NotFound {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, err
	}
	return tx.Documents(s.schema.ShardsRef(s.client, id)).GetAll()
}

// Restore recreates the counter document of counter id, with the default shard count, when it is
// missing while shards exist: they hold increments acknowledged after a delete (see Delete).
func (s *Store) Restore(ctx context.Context, id string) error {
	_, err := s.schema.CounterRef(s.client, id).Create(ctx, newCounterFields(s.defaultNumShards, shared.UnixMinute(s.clock.Now())))
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("restore counter %q: %w", id, err)
	}
	return nil
}
