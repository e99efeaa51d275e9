package counter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"
	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// fences are distinct counters' member fences: one per shard and member epoch, which every member
// write updates, so a Reset or Delete fails the plans of the epoch it ends.
type fences struct {
	sh     *shards
	raises singleflight.Group // raise per counter and epoch
}

// ref is the fence of shard n of counter id in member epoch epoch.
func (f *fences) ref(id, epoch string, n int) *firestore.DocumentRef {
	sum := sha256.Sum256([]byte(epoch))
	return f.of(id).Doc(hex.EncodeToString(sum[:16]) + "_" + strconv.Itoa(n))
}

// of is the collection of counter id's member fences.
func (f *fences) of(id string) *firestore.CollectionRef {
	return f.sh.schema.CounterRef(f.sh.client, id).Collection(shared.MemberFencesCollection)
}

// drop blindly deletes, in tx, every fence of snap's member epoch.
func (f *fences) drop(tx *firestore.Transaction, snap *firestore.DocumentSnapshot) error {
	if _, ever := snap.Data()[shared.FieldDistinct]; !ever {
		return nil
	}
	epoch := membersEpoch(snap)
	for n := range wire.MaxNumShards {
		if err := tx.Delete(f.ref(snap.Ref.ID, epoch, n)); err != nil {
			return err
		}
	}
	return nil
}

// set raises, in tx, counter id's fences of numShards shards in epoch.
func (f *fences) set(tx *firestore.Transaction, id, epoch string, numShards int) error {
	for n := range numShards {
		if err := tx.Set(f.ref(id, epoch, n), map[string]any{shared.FieldMembersEpoch: epoch}); err != nil {
			return err
		}
	}
	return nil
}

// raise raises distinct counter id's fences in its member epoch; ErrNotFound, or errEpochMoved
// (nothing written) when it is not distinct or epoch, unless "", is not its epoch.
func (f *fences) raise(ctx context.Context, id, epoch string) error {
	_, err, _ := f.raises.Do(id+"\x00"+epoch, func() (any, error) { return nil, f.raiseOnce(ctx, id, epoch) })
	return err
}

// raiseOnce is raise's transaction.
func (f *fences) raiseOnce(ctx context.Context, id, epoch string) error {
	counterRef := f.sh.schema.CounterRef(f.sh.client, id)
	err := f.sh.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(counterRef)
		switch {
		case status.Code(err) == codes.NotFound:
			return ErrNotFound
		case err != nil:
			return err
		case snap.Data()[shared.FieldDistinct] != true || epoch != "" && membersEpoch(snap) != epoch:
			return errEpochMoved
		}
		shape, err := f.sh.shapeOf(snap)
		if err != nil {
			return err
		}
		return f.set(tx, id, membersEpoch(snap), shape.NumShards)
	})
	if err != nil {
		return fmt.Errorf("raise member fences of %q: %w", id, err)
	}
	return nil
}
