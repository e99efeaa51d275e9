package counter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// incrementLimited adds r's increment only while r.Caller's total on the counter stays within
// [0, r.Limit], in one transaction with the total (and the key's record); it bypasses group commit.
func (s *Increments) incrementLimited(ctx context.Context, r Request) (Result, error) {
	inc, caller, limit, key := wire.Increment{Counter: r.Counter, Delta: r.Delta}, r.Caller, r.Limit, r.Key
	if caller == "" || limit < 1 {
		return Result{}, fmt.Errorf("limited increment of %q: a verified caller and a positive limit are required", inc.Counter)
	}
	if !s.life.Enter() {
		return Result{}, notApplied(ErrClosed)
	}
	defer s.life.Leave()
	fingerprint, err := fingerprintOf([]wire.Increment{inc})
	if err != nil {
		return Result{}, err
	}
	callerRef := s.schema.CallerRef(s.client, inc.Counter, callerDocID(caller))
	// A second attempt follows a refused commit (counter created or deleted meanwhile).
	for attempt := 0; ; attempt++ {
		w, err := s.planShard(ctx, inc.Counter, inc.Delta, s.clock.Now(), attempt > 0, false)
		if err != nil {
			return Result{}, notApplied(fmt.Errorf("limited increment of %q: %w", inc.Counter, err))
		}
		var out Result
		var inTx error // the last attempt's error before its commit
		sent := false  // some attempt reached its commit
		err = s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
			out, inTx = s.limitedInTransaction(tx, callerRef, limit, inc, key, fingerprint, w)
			sent = sent || inTx == nil
			return inTx
		})
		code := status.Code(err)
		switch {
		case err == nil:
			if out.Counted && !out.Duplicate { // a duplicate wrote nothing: w's creation or stamp did not happen
				s.remember([]shardWrite{w})
			}
			return out, nil
		case inTx != nil || !sent: // failed in an attempt's reads, or before any (BeginTransaction, ctx)
			return out, notApplied(fmt.Errorf("limited increment of %q by %q: %w", inc.Counter, caller, err))
		case attempt == 0 && (w.create && code == codes.AlreadyExists || (w.stamp || w.shardMustExist) && code == codes.NotFound):
			s.configs.forget(inc.Counter)
			continue
		}
		return out, outcomeUnknown(fmt.Errorf("limited increment of %q by %q: commit: %w", inc.Counter, caller, err))
	}
}

// limitedInTransaction is one attempt of incrementLimited's transaction: reads first, then writes.
func (s *Increments) limitedInTransaction(tx *firestore.Transaction, callerRef *firestore.DocumentRef, limit int64,
	inc wire.Increment, key *Key, fingerprint string, w shardWrite) (Result, error) {
	if key != nil {
		snap, err := tx.Get(s.dedupeRecordRef(*key))
		if err == nil {
			rec, err := decodeDedupeRecord(snap, *key)
			if err != nil {
				return Result{}, err
			}
			first, err := duplicateOutcome(rec, *key, fingerprint)
			if len(first.Applied) != 1 {
				return Result{}, err
			}
			first.Counted = first.Applied[0].Delta != 0
			return first, err
		}
		if status.Code(err) != codes.NotFound {
			return Result{}, err
		}
	}
	// A total written before the current epoch began is 0.
	counterSnap, err := tx.Get(s.schema.CounterRef(s.client, inc.Counter))
	if err != nil && status.Code(err) != codes.NotFound {
		return Result{}, err
	}
	var total int64
	snap, err := tx.Get(callerRef)
	switch {
	case err == nil && counterSnap.Exists() && !snap.UpdateTime.Before(epochStart(counterSnap)):
		if total, err = callerTotal(snap); err != nil {
			return Result{}, err
		}
	case err != nil && status.Code(err) != codes.NotFound:
		return Result{}, err
	}
	// A dedupe record of an uncounted request says delta 0, which no counted request has.
	out := Result{Applied: []AppliedIncrement{{Counter: inc.Counter, Shard: -1}}, PlannedAt: recordNow(s.clock)}
	var ops []op
	if next := total + inc.Delta; next >= 0 && next <= limit {
		out.Counted = true
		out.Applied[0] = AppliedIncrement{Counter: inc.Counter, Delta: inc.Delta, Shard: w.shard}
		ops = append(s.shardWriteOps(w), op{kind: opSet, ref: callerRef, data: callerTotalFields(next)})
	}
	if key != nil {
		// No write ID: a transaction's commit is never applied twice.
		ops = append(ops, s.dedupeRecordOp(dedupeWrite{key: *key, fingerprint: fingerprint, applied: out.Applied}, "", out.PlannedAt))
	}
	if err := addToTransaction(tx, ops); err != nil {
		return Result{}, err
	}
	return out, nil
}

// callerTotalFields is a caller document holding total.
func callerTotalFields(total int64) map[string]any {
	return map[string]any{shared.FieldNet: total, shared.FieldUpdatedAt: firestore.ServerTimestamp}
}

// callerTotal reads a caller document's total.
func callerTotal(snap *firestore.DocumentSnapshot) (int64, error) {
	v, err := snap.DataAt(shared.FieldNet)
	total, ok := v.(int64)
	if err != nil || !ok {
		return 0, fmt.Errorf("caller document %s has no integer %s", snap.Ref.Path, shared.FieldNet)
	}
	return total, nil
}

// callerDocID is a hash of caller: any caller is a valid ID, and the ID does not reveal it.
func callerDocID(caller string) string {
	sum := sha256.Sum256([]byte(caller))
	return hex.EncodeToString(sum[:])
}
