package counter

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardcount/counters/shared/clock"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/shared"
)

// writeRecordTTL is how long a write record lives.
const writeRecordTTL = time.Hour

// writeRecordSource is a write record's source, among the dedupe records.
const writeRecordSource = "write"

// documents names a Store's documents and maps its writes to operations.
type documents struct {
	client           *firestore.Client
	schema           shared.Schema
	defaultNumShards int
	dedupeTTL        time.Duration
}

// opKind is how an op writes its document.
type opKind int

const (
	opCreate opKind = iota // AlreadyExists when the document exists
	opUpdate               // NotFound when the document is missing
	opMerge                // Set with MergeAll
	opSet
	opDelete
)

// op is one document write, for a WriteBatch or a Transaction.
type op struct {
	kind    opKind
	ref     *firestore.DocumentRef
	data    any                // opCreate, opMerge, opSet
	updates []firestore.Update // opUpdate
}

// shardWriteOps maps shard write w to operations.
func (d documents) shardWriteOps(w shardWrite) []op {
	var ops []op
	counterRef := d.schema.CounterRef(d.client, w.counter)
	switch {
	case w.create:
		ops = append(ops, op{kind: opCreate, ref: counterRef, data: newCounterFields(d.defaultNumShards, w.minute)})
	case w.stamp:
		ops = append(ops, op{kind: opUpdate, ref: counterRef, updates: touchUpdate(w.minute)})
	}
	shardRef := d.schema.ShardRef(d.client, w.counter, w.shard)
	if w.shardMustExist {
		return append(ops, op{kind: opUpdate, ref: shardRef, updates: shardIncrementUpdates(w)})
	}
	return append(ops, op{kind: opMerge, ref: shardRef, data: shardIncrement(w)})
}

// planOps is plan's commit: write record, dedupe records, shard writes.
func (d documents) planOps(plan *commitPlan) []op {
	var ops []op
	if plan.writeRecord {
		ops = append(ops, op{kind: opCreate, ref: d.writeRecordRef(plan), data: writeRecord(plan, false)})
	}
	for _, dw := range plan.dedupes {
		ops = append(ops, d.dedupeRecordOp(dw, plan.writeID, plan.now))
	}
	for _, w := range plan.shards {
		ops = append(ops, d.shardWriteOps(w)...)
	}
	return ops
}

// commitOps commits ops atomically, within commitTimeout whatever ctx says.
func (d documents) commitOps(ctx context.Context, ops []op) error {
	b := d.client.Batch()
	addToBatch(b, ops)
	ctx, cancel := detached(ctx, commitTimeout)
	defer cancel()
	_, err := b.Commit(ctx)
	return err
}

// addToBatch adds ops to b.
func addToBatch(b *firestore.WriteBatch, ops []op) {
	for _, o := range ops {
		switch o.kind {
		case opCreate:
			b.Create(o.ref, o.data)
		case opUpdate:
			b.Update(o.ref, o.updates)
		case opMerge:
			b.Set(o.ref, o.data, firestore.MergeAll)
		case opSet:
			b.Set(o.ref, o.data)
		case opDelete:
			b.Delete(o.ref)
		}
	}
}

// addToTransaction adds ops to tx, stopping at the first error.
func addToTransaction(tx *firestore.Transaction, ops []op) error {
	for _, o := range ops {
		var err error
		switch o.kind {
		case opCreate:
			err = tx.Create(o.ref, o.data)
		case opUpdate:
			err = tx.Update(o.ref, o.updates)
		case opMerge:
			err = tx.Set(o.ref, o.data, firestore.MergeAll)
		case opSet:
			err = tx.Set(o.ref, o.data)
		case opDelete:
			err = tx.Delete(o.ref)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// newCounterFields is the document of a counter a write creates.
func newCounterFields(numShards int, minute int64) map[string]any {
	return map[string]any{shared.FieldNumShards: numShards, shared.FieldTouchedMinute: minute,
		shared.FieldMemberCollection: shared.MembersCollection}
}

// touchUpdate raises touched_minute to minute; it fails on a missing counter.
func touchUpdate(minute int64) []firestore.Update {
	return []firestore.Update{{Path: shared.FieldTouchedMinute, Value: firestore.FieldTransformMaximum(minute)}}
}

// shardIncrement is w's server-side increment of a shard.
func shardIncrement(w shardWrite) map[string]any {
	m := map[string]any{
		shared.FieldCount:  firestore.Increment(w.delta),
		shared.FieldWrites: firestore.Increment(1),
	}
	if buckets := bucketIncrements(w.windows, w.parts); buckets != nil {
		m[shared.FieldBuckets] = buckets
	}
	return m
}

// shardIncrementUpdates is shardIncrement as updates, one per leaf so buckets merge.
func shardIncrementUpdates(w shardWrite) []firestore.Update {
	var updates []firestore.Update
	var add func(path firestore.FieldPath, m map[string]any)
	add = func(path firestore.FieldPath, m map[string]any) {
		for k, v := range m {
			p := append(slices.Clip(path), k)
			if nested, ok := v.(map[string]any); ok {
				add(p, nested)
				continue
			}
			updates = append(updates, firestore.Update{FieldPath: p, Value: v})
		}
	}
	add(nil, shardIncrement(w))
	return updates
}

func (d documents) writeRecordRef(plan *commitPlan) *firestore.DocumentRef {
	return d.schema.DedupeRef(d.client, plan.writeID)
}

// writeRecord marks a commit of unkeyed requests (or its fence) as written.
func writeRecord(plan *commitPlan, fence bool) map[string]any {
	return map[string]any{
		shared.FieldDedupeSource: writeRecordSource,
		shared.FieldWriteFence:   fence,
		shared.FieldCreatedAt:    plan.now,
		shared.FieldExpiresAt:    plan.now.Add(writeRecordTTL),
	}
}

func (d documents) dedupeRecordRef(key Key) *firestore.DocumentRef {
	return d.schema.DedupeRef(d.client, key.recordID())
}

// dedupeRecordOp creates dw's dedupe record, applied by writeID at now.
func (d documents) dedupeRecordOp(dw dedupeWrite, writeID string, now time.Time) op {
	applied := make([]map[string]any, len(dw.applied))
	for i, a := range dw.applied {
		applied[i] = map[string]any{
			shared.FieldAppliedCounter: a.Counter,
			shared.FieldAppliedDelta:   a.Delta,
			shared.FieldAppliedShard:   a.Shard,
		}
	}
	rec := map[string]any{
		shared.FieldDedupeSource:      string(dw.key.Source),
		shared.FieldDedupeKey:         dw.key.ID,
		shared.FieldDedupeFingerprint: dw.fingerprint,
		shared.FieldDedupeApplied:     applied,
		shared.FieldDedupeWrite:       writeID,
		shared.FieldCreatedAt:         now,
		shared.FieldExpiresAt:         now.Add(d.dedupeTTL),
	}
	if dw.key.Caller != "" {
		rec[shared.FieldDedupeCaller] = dw.key.Caller
	}
	if dw.windows != nil {
		rec[shared.FieldDedupeWindows] = dw.windows
	}
	return op{kind: opCreate, ref: d.dedupeRecordRef(dw.key), data: rec}
}

// recordNow is c's now as created_at stores it (UTC, microseconds).
func recordNow(c clock.Clock) time.Time { return c.Now().UTC().Truncate(time.Microsecond) }

// dedupeRecordData is a dedupe record as read back.
type dedupeRecordData struct {
	Fingerprint string    `firestore:"fingerprint"`
	Write       string    `firestore:"write"`
	CreatedAt   time.Time `firestore:"created_at"`
	Windows     []string  `firestore:"windows"`
	Applied     []struct {
		Counter string `firestore:"counter"`
		Delta   int64  `firestore:"delta"`
		Shard   int    `firestore:"shard"`
	} `firestore:"applied"`
}

// decodeDedupeRecord reads key's dedupe record.
func decodeDedupeRecord(snap *firestore.DocumentSnapshot, key Key) (dedupeRecordData, error) {
	var rec dedupeRecordData
	if err := snap.DataTo(&rec); err != nil {
		return dedupeRecordData{}, fmt.Errorf("decode dedupe record of key %s %q: %w", key.Source, key.ID, err)
	}
	return rec, nil
}

// duplicateOutcome is key's first application; ErrKeyReused when fingerprint differs.
func duplicateOutcome(rec dedupeRecordData, key Key, fingerprint string) (Result, error) {
	outcome := Result{Duplicate: true, Applied: make([]AppliedIncrement, len(rec.Applied)), PlannedAt: rec.CreatedAt}
	for i, a := range rec.Applied {
		outcome.Applied[i] = AppliedIncrement{Counter: a.Counter, Delta: a.Delta, Shard: a.Shard}
	}
	if rec.Fingerprint != fingerprint {
		return outcome, fmt.Errorf("increment key %s %q: %w", key.Source, key.ID, ErrKeyReused)
	}
	return outcome, nil
}
