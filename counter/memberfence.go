package counter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// fenceRef is the fence of shard n of counter id in member epoch epoch.
func (s *Store) fenceRef(id, epoch string, n int) *firestore.DocumentRef {
	sum := sha256.Sum256([]byte(epoch))
	return s.fences(id).Doc(hex.EncodeToString(sum[:16]) + "_" + strconv.Itoa(n))
}

// fences is the collection of counter id's member fences.
func (s *Store) fences(id string) *firestore.CollectionRef {
	return s.schema.CounterRef(s.client, id).Collection(shared.MemberFencesCollection)
}

// dropFences blindly deletes, in tx, every fence of snap's member epoch.
func (s *Store) dropFences(tx *firestore.Transaction, snap *firestore.DocumentSnapshot) error {
	if _, ever := snap.Data()[shared.FieldDistinct]; !ever {
		return nil
	}
	epoch := membersEpoch(snap)
	for n := range wire.MaxNumShards {
		if err := tx.Delete(s.fenceRef(snap.Ref.ID, epoch, n)); err != nil {
			return err
		}
	}
	return nil
}

// setFences raises, in tx, counter id's fences of numShards shards in epoch.
func (s *Store) setFences(tx *firestore.Transaction, id, epoch string, numShards int) error {
	for n := range numShards {
		if err := tx.Set(s.fenceRef(id, epoch, n), map[string]any{shared.FieldMembersEpoch: epoch}); err != nil {
			return err
		}
	}
	return nil
}

// raiseFences raises distinct counter id's fences in its member epoch; ErrNotFound, or errEpochMoved
// (nothing written) when it is not distinct or epoch, unless "", is not its epoch.
func (s *Store) raiseFences(ctx context.Context, id, epoch string) error {
	_, err, _ := s.raises.Do(id+"\x00"+epoch, func() (any, error) { return nil, s.raiseFencesOnce(ctx, id, epoch) })
	return err
}

// raiseFencesOnce is raiseFences' transaction.
func (s *Store) raiseFencesOnce(ctx context.Context, id, epoch string) error {
	counterRef := s.schema.CounterRef(s.client, id)
	err := s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(counterRef)
		switch {
		case status.Code(err) == codes.NotFound:
			return ErrNotFound
		case err != nil:
			return err
		case snap.Data()[shared.FieldDistinct] != true || epoch != "" && membersEpoch(snap) != epoch:
			return errEpochMoved
		}
		shape, err := s.ShapeOf(snap)
		if err != nil {
			return err
		}
		return s.setFences(tx, id, membersEpoch(snap), shape.NumShards)
	})
	if err != nil {
		return fmt.Errorf("raise member fences of %q: %w", id, err)
	}
	return nil
}
