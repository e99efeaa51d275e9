package counter

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/shared"
)

// writeRecordSource is the source field of a write record, which lives among the dedupe records so
// that their TTL policy (on expires_at) deletes it too.
const writeRecordSource = "write"

// firestorePlans writes plans to Firestore.
type firestorePlans struct {
	client           *firestore.Client
	schema           shared.Schema
	defaultNumShards int
	dedupeTTL        time.Duration
}

// detached is ctx without its cancellation, bounded by timeout: a write that was sent is seen
// through, whatever became of the request that asked for it.
func detached(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

func (f *firestorePlans) writeRef(plan *commitPlan) *firestore.DocumentRef {
	return f.schema.DedupeRef(f.client, plan.writeID)
}

// commit sends the plan as one WriteBatch commit: a single RPC that applies every write or none (a
// write-only transaction would cost a BeginTransaction round trip more, BulkWriter is not atomic).
func (f *firestorePlans) commit(ctx context.Context, plan *commitPlan) error {
	b := f.client.Batch()
	if plan.writeRecord {
		b.Create(f.writeRef(plan), writeRecord(plan, false))
	}
	for _, k := range plan.keyed {
		b.Create(f.schema.DedupeRef(f.client, k.key.recordID()), dedupeRecord(k, plan.writeID, plan.now, plan.now.Add(f.dedupeTTL)))
	}
	for _, w := range plan.shards {
		counterRef := f.schema.CounterRef(f.client, w.counter)
		switch {
		case w.create:
			b.Create(counterRef, newCounterFields(f.defaultNumShards, w.minute))
		case w.stamp:
			b.Update(counterRef, touchUpdate(w.minute))
		}
		b.Set(f.schema.ShardRef(f.client, w.counter, w.shard), shardIncrement(w.delta), firestore.MergeAll)
	}
	ctx, cancel := detached(ctx, commitTimeout)
	defer cancel()
	if _, err := b.Commit(ctx); err != nil {
		return fmt.Errorf("commit write %s: %w", plan.writeID, err)
	}
	return nil
}

// fence creates the plan's write record alone, marked as a fence: once it exists, the plan's commit
// (which creates the same document) can never apply.
func (f *firestorePlans) fence(ctx context.Context, plan *commitPlan) error {
	ctx, cancel := detached(ctx, resolveTimeout)
	defer cancel()
	if _, err := f.writeRef(plan).Create(ctx, writeRecord(plan, true)); err != nil {
		return fmt.Errorf("fence write %s: %w", plan.writeID, err)
	}
	return nil
}

// inspect reads, in one request, the plan's write record, its dedupe records and the counters it
// creates. A dedupe record carrying the plan's write ID means the plan applied; one carrying another
// is a duplicate.
func (f *firestorePlans) inspect(ctx context.Context, plan *commitPlan) (inspection, error) {
	refs := []*firestore.DocumentRef{f.writeRef(plan)}
	for _, k := range plan.keyed {
		refs = append(refs, f.schema.DedupeRef(f.client, k.key.recordID()))
	}
	var created []string
	for _, w := range plan.shards {
		if w.create {
			refs = append(refs, f.schema.CounterRef(f.client, w.counter))
			created = append(created, w.counter)
		}
	}
	ctx, cancel := detached(ctx, resolveTimeout)
	defer cancel()
	snaps, err := f.client.GetAll(ctx, refs)
	if err != nil {
		return inspection{}, fmt.Errorf("read back write %s: %w", plan.writeID, err)
	}
	in := inspection{duplicates: make(map[int]dedupeRecordData)}
	if w := snaps[0]; w.Exists() {
		in.write = writeApplied
		if fenced, _ := w.DataAt(shared.FieldWriteFence); fenced == true {
			in.write = writeFenced
		}
	}
	for k := range plan.keyed {
		snap := snaps[1+k]
		if !snap.Exists() {
			continue
		}
		var rec dedupeRecordData
		if err := snap.DataTo(&rec); err != nil {
			return inspection{}, fmt.Errorf("decode dedupe record of key %s %q: %w", plan.keyed[k].key.Source, plan.keyed[k].key.ID, err)
		}
		if rec.Write == plan.writeID {
			in.write = writeApplied
			continue
		}
		in.duplicates[k] = rec
	}
	for n, id := range created {
		if snaps[1+len(plan.keyed)+n].Exists() {
			in.existing = append(in.existing, id)
		}
	}
	if in.write == writeApplied { // the plan's own documents are not in its way
		in.duplicates, in.existing = nil, nil
	}
	return in, nil
}

// writeRecord is the document that marks a commit holding unkeyed increments (or its fence) as written.
func writeRecord(plan *commitPlan, fence bool) map[string]any {
	return map[string]any{
		shared.FieldDedupeSource: writeRecordSource,
		shared.FieldWriteFence:   fence,
		shared.FieldCreatedAt:    plan.now,
		shared.FieldExpiresAt:    plan.now.Add(writeRecordTTL),
	}
}

// shardIncrement is the server-side increment of a shard by one write; it creates the shard document
// if needed. It counts the write (FieldWrites), which the roll-up sums across instances to measure the
// counter's write rate and size its shard count.
func shardIncrement(delta int64) map[string]any {
	return map[string]any{
		shared.FieldCount:  firestore.Increment(delta),
		shared.FieldWrites: firestore.Increment(1),
	}
}
