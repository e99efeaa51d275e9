package counter

import (
	"context"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Delete removes counter id's counter document, every shard document and its roll-up in one
// transaction; it fails with ErrNotFound when there is no counter document. An increment racing it
// is ordered wholly before it (and deleted) or after it: the counter then comes back holding exactly
// the increments acknowledged after the delete (see Restore).
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
	s.shardCounts.forget(id)
	s.touches.forget(id)
	return nil
}

// Reset sets every shard's count of counter id to 0 in one transaction (their writes stay) and
// returns the value it discarded; it fails with ErrNotFound when there is no counter document. An
// increment racing it is ordered wholly before it (discarded) or after it (counted).
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

// Restore creates counter id's counter document with the default shard count if it is missing; the
// roll-up calls it for shards found without one (increments acknowledged after a Delete).
func (s *Store) Restore(ctx context.Context, id string) error {
	_, err := s.schema.CounterRef(s.client, id).Create(ctx, newCounterFields(s.defaultNumShards, shared.UnixMinute(s.clock.Now())))
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("restore counter %q: %w", id, err)
	}
	return nil
}
