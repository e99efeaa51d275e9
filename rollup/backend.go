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

// errConflict: the roll-up changed since read, or the counter was deleted; read again.
var errConflict = errors.New("roll-up changed since read")

// view is one read of a counter's roll-up and counter document, at readAt (Firestore's clock).
type view struct {
	rollup *Document // nil: none
	// version is the roll-up's update time, the next write's condition.
	version                     time.Time
	counterExists               bool
	shape                       counter.Shape
	windows                     []string
	group                       string
	mirrorDocument, mirrorField string
	hoursDue                    bool // counter.Pruner.HourBucketsDue
	readAt                      time.Time
}

// rollupWrite is one computed roll-up.
type rollupWrite struct {
	count, shardWrites int64
	windows            map[string]counter.BucketCount
	computedAt         time.Time
	source, writer     string
	decision           shardDecision
}

// backend is what the engine reads and writes: Firestore, or a fake in unit tests.
type backend interface {
	read(ctx context.Context, id string) (view, error)
	// sums is counter.Reader.SumsAt.
	sums(ctx context.Context, id string, at time.Time, windows []string) (counter.Sums, error)
	// write stores w if the roll-up is still as in prev (a first one only while the counter exists);
	// errConflict when not.
	write(ctx context.Context, id string, prev view, w rollupWrite) error
	// removeRollup deletes the roll-up if it is still as in prev.
	removeRollup(ctx context.Context, id string, prev view) error
	restore(ctx context.Context, id string) error
	adapt(ctx context.Context, id string, from, to int) error
	pruneHours(ctx context.Context, id string, now time.Time) error
}

// firestoreBackend keeps roll-ups in Firestore.
type firestoreBackend struct {
	client    *firestore.Client
	schema    shared.Schema
	reader    *counter.Reader
	lifecycle *counter.Lifecycle // restores and reshards
	pruner    *counter.Pruner
	// interval also spaces a top list's recomputations.
	interval time.Duration
	tops     topRefreshes
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
		if v.shape, err = b.reader.ShapeOf(snaps[1]); err != nil {
			return view{}, err
		}
		v.windows = counter.WindowsOf(snaps[1])
		v.group = counter.GroupOf(snaps[1])
		v.mirrorDocument, _ = snaps[1].Data()[shared.FieldMirrorDocument].(string)
		v.mirrorField, _ = snaps[1].Data()[shared.FieldMirrorField].(string)
		v.hoursDue = b.pruner.HourBucketsDue(snaps[1], v.readAt)
	}
	return v, nil
}

func (b *firestoreBackend) sums(ctx context.Context, id string, at time.Time, windows []string) (counter.Sums, error) {
	return b.reader.SumsAt(ctx, id, at, windows)
}

func (b *firestoreBackend) write(ctx context.Context, id string, prev view, w rollupWrite) error {
	ref := b.schema.RollupRef(b.client, id)
	// The mirror is written in the roll-up's commit, so it never takes an older count than it has;
	// a missing mirror document (NotFound) stays missing: the commit is sent again without it.
	mirror := prev.mirrorDocument != ""
	writtenAt, err := b.commitRollup(ctx, ref, id, prev, w, mirror)
	if mirror && status.Code(err) == codes.NotFound {
		writtenAt, err = b.commitRollup(ctx, ref, id, prev, w, false)
	}
	switch code := status.Code(err); {
	case errors.Is(err, errConflict):
		return fmt.Errorf("write roll-up of counter %q: %w", id, err)
	case code == codes.FailedPrecondition || code == codes.AlreadyExists || code == codes.NotFound:
		return fmt.Errorf("write roll-up of counter %q: %w: %w", id, errConflict, err)
	case err != nil:
		return fmt.Errorf("write roll-up of counter %q: %w", id, err)
	}
	left := prev.leftGroup()
	if prev.group == "" && left == "" {
		return nil
	}
	if writtenAt.IsZero() { // a transaction's commit time is not returned
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

// commitRollup writes w as the roll-up at ref: the first one in a transaction that finds the
// counter, a later one unless the roll-up changed since prev; with mirror, w's count goes into
// prev's mirror in the same commit. It returns the commit time when known.
func (b *firestoreBackend) commitRollup(ctx context.Context, ref *firestore.DocumentRef, id string, prev view, w rollupWrite, mirror bool) (time.Time, error) {
	windows := windowsField(w.windows)
	if prev.rollup == nil {
		return time.Time{}, b.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
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
			if mirror {
				if err := tx.Update(b.client.Doc(prev.mirrorDocument), mirrorUpdate(prev, w.count)); err != nil {
					return err
				}
			}
			return tx.Create(ref, doc)
		})
	}
	var coolSince, group any = firestore.Delete, firestore.Delete
	if !w.decision.coolSince.IsZero() {
		coolSince = w.decision.coolSince
	}
	if prev.group != "" {
		group = prev.group
	}
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
	batch := b.client.Batch()
	batch.Update(ref, updates, firestore.LastUpdateTime(prev.version))
	if mirror {
		batch.Update(b.client.Doc(prev.mirrorDocument), mirrorUpdate(prev, w.count))
	}
	res, err := batch.Commit(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return res[0].UpdateTime, nil
}

// leftGroup is the previous roll-up's group when the counter's is now another, else "".
func (v view) leftGroup() string {
	if v.rollup == nil || v.rollup.Group == v.group {
		return ""
	}
	return v.rollup.Group
}

// windowsField is {window: {bucket, count}}, or firestore.Delete for none.
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
	return b.lifecycle.Restore(ctx, id)
}

func (b *firestoreBackend) adapt(ctx context.Context, id string, from, to int) error {
	_, err := b.lifecycle.Adapt(ctx, id, from, to)
	return err
}

func (b *firestoreBackend) pruneHours(ctx context.Context, id string, now time.Time) error {
	_, err := b.pruner.PruneHourBuckets(ctx, id, now)
	return err
}

// mirrorUpdate sets v's mirror field to count.
func mirrorUpdate(v view, count int64) []firestore.Update {
	return []firestore.Update{{FieldPath: strings.Split(v.mirrorField, "."), Value: count}}
}
