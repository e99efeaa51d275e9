package rollup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// errConflict is a conditional roll-up write that found the roll-up changed since it was read (or
// the counter deleted): the refresh reads again.
var errConflict = errors.New("roll-up changed since read")

// view is what one read of a counter's roll-up shows the engine.
type view struct {
	// rollup is the roll-up document; nil when there is none.
	rollup *Document
	// version is the roll-up document's update time, the condition of the next write; zero when
	// there is none.
	version time.Time
	// counterExists is false when the counter document is missing (deleted, or never configured).
	counterExists bool
	// shape is the counter's shape, when it exists.
	shape counter.Shape
	// windows are the counter's windows, when it exists: the roll-up holds their current buckets.
	windows []string
	// group is the counter's group ("" for none): the roll-up carries it, and a write refreshes the
	// group's top lists.
	group string
	// mirrorDocument and mirrorField name the app document field the count is copied into ("": none).
	mirrorDocument, mirrorField string
	// hoursDue is true when the counter's shards hold hourly buckets to prune
	// (counter.Store.HourBucketsDue).
	hoursDue bool
	// readAt is Firestore's time of the read: a roll-up computed from this read sums the shards as
	// they were then (backend.sums) and is computed at it.
	readAt time.Time
}

// rollupWrite is one computed roll-up.
type rollupWrite struct {
	count, shardWrites int64
	// windows are the counts in the buckets of the counter's windows holding computedAt.
	windows        map[string]counter.BucketCount
	computedAt     time.Time
	source, writer string
	decision       shardDecision
}

// backend is what the engine reads and writes: Firestore in production, an in-memory fake in the
// engine's unit tests, so its throttling, races and failures are tested without the emulator.
type backend interface {
	// read reads counter id's roll-up and counter document.
	read(ctx context.Context, id string) (view, error)
	// sums sums counter id's shards as they were at read time at, and its counts in the buckets of
	// windows holding at (see counter.Store.SumsAt).
	sums(ctx context.Context, id string, at time.Time, windows []string) (counter.Sums, error)
	// write stores w as counter id's roll-up on condition that it is still as in prev (a first
	// roll-up only while the counter document exists); errConflict when not.
	write(ctx context.Context, id string, prev view, w rollupWrite) error
	// removeRollup deletes counter id's roll-up if it is still as in prev.
	removeRollup(ctx context.Context, id string, prev view) error
	// restore recreates a missing counter document (see counter.Store.Restore).
	restore(ctx context.Context, id string) error
	// adapt changes the shard count (see counter.Store.Adapt).
	adapt(ctx context.Context, id string, from, to int) error
	// pruneHours deletes hourly buckets kept too long (see counter.Store.PruneHourBuckets).
	pruneHours(ctx context.Context, id string, now time.Time) error
}

// firestoreBackend keeps roll-ups in Firestore.
type firestoreBackend struct {
	client   *firestore.Client
	schema   shared.Schema
	counters *counter.Store
	// interval is the roll-up interval: a group's top list is recomputed at most once per interval.
	interval time.Duration
}

func (b *firestoreBackend) read(ctx context.Context, id string) (view, error) {
	snaps, err := b.client.GetAll(ctx, []*firestore.DocumentRef{b.schema.RollupRef(b.client, id), b.schema.CounterRef(b.client, id)})
	if err != nil {
		return view{}, fmt.Errorf("read roll-up and counter %q: %w", id, err)
	}
	v := view{readAt: snaps[0].ReadTime}
	if v.rollup, err = decodeRollup(snaps[0]); err != nil {
		return view{}, err
	}
	if v.rollup != nil {
		v.version = snaps[0].UpdateTime
	}
	if v.counterExists = snaps[1].Exists(); v.counterExists {
		if v.shape, err = b.counters.ShapeOf(snaps[1]); err != nil {
			return view{}, err
		}
		v.windows = counter.WindowsOf(snaps[1])
		v.group = counter.GroupOf(snaps[1])
		v.mirrorDocument, _ = snaps[1].Data()[shared.FieldMirrorDocument].(string)
		v.mirrorField, _ = snaps[1].Data()[shared.FieldMirrorField].(string)
		v.hoursDue = b.counters.HourBucketsDue(snaps[1], v.readAt)
	}
	return v, nil
}

func (b *firestoreBackend) sums(ctx context.Context, id string, at time.Time, windows []string) (counter.Sums, error) {
	return b.counters.SumsAt(ctx, id, at, windows)
}

func (b *firestoreBackend) write(ctx context.Context, id string, prev view, w rollupWrite) error {
	ref := b.schema.RollupRef(b.client, id)
	var coolSince any = firestore.Delete
	if !w.decision.coolSince.IsZero() {
		coolSince = w.decision.coolSince
	}
	windows := windowsField(w.windows)
	var group any = firestore.Delete
	if prev.group != "" {
		group = prev.group
	}
	var (
		writtenAt time.Time
		err       error
	)
	if prev.rollup == nil {
		err = b.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
			if _, err := tx.Get(b.schema.CounterRef(b.client, id)); status.Code(err) == codes.NotFound {
				return errConflict // deleted since read
			} else if err != nil {
				return err
			}
			doc := map[string]any{
				shared.FieldCount: w.count, shared.FieldUpdatedAt: w.computedAt, FieldSource: w.source, FieldRevision: 1,
				FieldShardWrites: w.shardWrites, FieldWriteRate: w.decision.rate, FieldWriter: w.writer,
			}
			if !w.decision.coolSince.IsZero() {
				doc[FieldCoolSince] = w.decision.coolSince
			}
			if windows != firestore.Delete {
				doc[shared.FieldWindows] = windows
			}
			if prev.group != "" {
				doc[shared.FieldGroup] = prev.group
			}
			return tx.Create(ref, doc)
		})
	} else {
		updates := []firestore.Update{
			{Path: shared.FieldCount, Value: w.count},
			{Path: shared.FieldUpdatedAt, Value: w.computedAt},
			{Path: FieldSource, Value: w.source},
			{Path: FieldWriter, Value: w.writer},
			{Path: FieldRevision, Value: firestore.Increment(1)},
			{Path: FieldShardWrites, Value: w.shardWrites},
			{Path: FieldWriteRate, Value: w.decision.rate},
			{Path: FieldCoolSince, Value: coolSince},
			{Path: shared.FieldWindows, Value: windows},
			{Path: shared.FieldGroup, Value: group},
		}
		if left := prev.leftGroup(); left != "" {
			updates = append(updates, firestore.Update{Path: FieldLeftGroup, Value: left})
		}
		var res *firestore.WriteResult
		res, err = ref.Update(ctx, updates, firestore.LastUpdateTime(prev.version))
		if err == nil {
			writtenAt = res.UpdateTime
		}
	}
	switch code := status.Code(err); {
	case errors.Is(err, errConflict):
		return fmt.Errorf("write roll-up of counter %q: %w", id, err)
	case code == codes.FailedPrecondition || code == codes.AlreadyExists || code == codes.NotFound:
		return fmt.Errorf("write roll-up of counter %q: %w: %w", id, errConflict, err)
	case err != nil:
		return fmt.Errorf("write roll-up of counter %q: %w", id, err)
	}
	if err := b.mirror(ctx, prev, w.count); err != nil {
		return err
	}
	left := prev.leftGroup()
	if prev.group == "" && left == "" {
		return nil
	}
	if writtenAt.IsZero() { // created in a transaction, whose commit time the client does not say
		snap, err := ref.Get(ctx)
		if err != nil {
			return fmt.Errorf("read back the first roll-up of counter %q: %w", id, err)
		}
		writtenAt = snap.UpdateTime
	}
	if left != "" {
		if err := b.refreshTops(ctx, left, prev.rollup.windowNames(), writtenAt); err != nil {
			return err
		}
	}
	if prev.group == "" {
		return nil
	}
	return b.refreshTops(ctx, prev.group, prev.windows, writtenAt)
}

// leftGroup is the group the counter leaves with the roll-up written after v: the previous
// roll-up's group when the counter's is now another; "" when none.
func (v view) leftGroup() string {
	if v.rollup == nil || v.rollup.Group == v.group {
		return ""
	}
	return v.rollup.Group
}

// windowsField is the roll-up's windows field for a counter's bucket counts: {window: {bucket,
// count}}, or firestore.Delete for a counter without windows.
func windowsField(counts map[string]counter.BucketCount) any {
	if len(counts) == 0 {
		return firestore.Delete
	}
	m := make(map[string]any, len(counts))
	for w, c := range counts {
		m[w] = map[string]any{shared.FieldBucket: c.Bucket, shared.FieldCount: c.Count}
	}
	return m
}

func (b *firestoreBackend) removeRollup(ctx context.Context, id string, prev view) error {
	_, err := b.schema.RollupRef(b.client, id).Delete(ctx, firestore.LastUpdateTime(prev.version))
	if err != nil && status.Code(err) != codes.FailedPrecondition && status.Code(err) != codes.NotFound {
		return fmt.Errorf("remove the roll-up of deleted counter %q: %w", id, err)
	}
	return nil
}

func (b *firestoreBackend) restore(ctx context.Context, id string) error {
	return b.counters.Restore(ctx, id)
}

func (b *firestoreBackend) adapt(ctx context.Context, id string, from, to int) error {
	_, err := b.counters.Adapt(ctx, id, from, to)
	return err
}

func (b *firestoreBackend) pruneHours(ctx context.Context, id string, now time.Time) error {
	_, err := b.counters.PruneHourBuckets(ctx, id, now)
	return err
}

// mirror copies count into the app document field v names, if any; a missing document is left
// missing (nothing of the app's but the field is written).
func (b *firestoreBackend) mirror(ctx context.Context, v view, count int64) error {
	if v.mirrorDocument == "" {
		return nil
	}
	_, err := b.client.Doc(v.mirrorDocument).Update(ctx, []firestore.Update{{FieldPath: strings.Split(v.mirrorField, "."), Value: count}})
	if err != nil && status.Code(err) != codes.NotFound {
		return fmt.Errorf("mirror the count into %s.%s: %w", v.mirrorDocument, v.mirrorField, err)
	}
	return nil
}
