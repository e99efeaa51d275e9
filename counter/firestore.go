package counter

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/shared"
)

// firestorePlans sends plans to Firestore.
type firestorePlans struct {
	documents
}

// detached is ctx without its cancellation, bounded by timeout.
func detached(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

// commit sends the plan's operations as one atomic WriteBatch.
func (f *firestorePlans) commit(ctx context.Context, plan *commitPlan) error {
	if err := f.commitOps(ctx, f.planOps(plan)); err != nil {
		return fmt.Errorf("commit write %s: %w", plan.writeID, err)
	}
	return nil
}

// fence creates the plan's write record alone, marked as a fence.
func (f *firestorePlans) fence(ctx context.Context, plan *commitPlan) error {
	ctx, cancel := detached(ctx, resolveTimeout)
	defer cancel()
	if _, err := f.writeRecordRef(plan).Create(ctx, writeRecord(plan, true)); err != nil {
		return fmt.Errorf("fence write %s: %w", plan.writeID, err)
	}
	return nil
}

// inspect reads the plan's write record, dedupe records and created counters in one request; a
// dedupe record with another write ID is a duplicate.
func (f *firestorePlans) inspect(ctx context.Context, plan *commitPlan) (inspection, error) {
	refs := []*firestore.DocumentRef{f.writeRecordRef(plan)}
	for _, dw := range plan.dedupes {
		refs = append(refs, f.dedupeRecordRef(dw.key))
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
	if snap := snaps[0]; snap.Exists() {
		in.write = writeApplied
		if fenced, _ := snap.DataAt(shared.FieldWriteFence); fenced == true {
			in.write = writeFenced
		}
	}
	for d, dw := range plan.dedupes {
		snap := snaps[1+d]
		if !snap.Exists() {
			continue
		}
		rec, err := decodeDedupeRecord(snap, dw.key)
		if err != nil {
			return inspection{}, err
		}
		if rec.Write == plan.writeID {
			in.write = writeApplied
			continue
		}
		in.duplicates[d] = rec
	}
	for n, id := range created {
		if snaps[1+len(plan.dedupes)+n].Exists() {
			in.existing = append(in.existing, id)
		}
	}
	if in.write == writeApplied { // its own documents are not in its way
		in.duplicates, in.existing = nil, nil
	}
	return in, nil
}
