package counter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"cloud.google.com/go/firestore"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Change is one change of a counted document in one collection counter.
type Change struct {
	Key string // the same for every delivery of the change
	// Bucket, agreed by every delivery, picks the key's ledger second.
	Bucket time.Time
	// InBase reports whether the base read at base holds the change.
	InBase   func(ctx context.Context, base time.Time) (bool, error)
	Baseline Baseline // for a counter without a base
}

// Baseline is what a collection counter starts from.
type Baseline struct {
	Source   string   // the declaration's name
	Settings Settings // for a new counter
	// ValueAt is the exact value of the counter's documents at read time at.
	ValueAt func(ctx context.Context, at time.Time) (int64, error)
	// MirrorDocument and MirrorField (dotted), optional, get the count on roll-ups.
	MirrorDocument, MirrorField string
}

// ErrSourceCounter refuses a plain increment of a collection counter: only its documents change it.
var ErrSourceCounter = errors.New("the counter counts documents (a collection counter): write or delete its documents instead")

// applyChange counts r's change exactly once. See docs/collection-counters.md, "How it stays exact".
func (s *Store) applyChange(ctx context.Context, r Request) (Result, error) {
	ch := r.Change
	if r.Delta == 0 || ch.Key == "" || ch.InBase == nil || r.Key != nil {
		return Result{}, fmt.Errorf("change of counter %q: a delta other than 0, a change key, InBase and no request Key are required", r.Counter)
	}
	rep := s.submit(ctx, request{incs: r.increments(), at: r.At, change: ch})
	if rep.err != nil {
		return Result{}, fmt.Errorf("change %s of counter %q: %w", ch.Key, r.Counter, rep.err)
	}
	return rep.outcome, nil
}

// maxChangeAttempts bounds the transactions of one batch of changes.
const maxChangeAttempts = 5

// commitChanges counts batch's changes, all of one counter, in one transaction.
func (s *Store) commitChanges(ctx context.Context, batch []request) []reply {
	replies := make([]reply, len(batch))
	id := batch[0].incs[0].Counter
	var err error
	for attempt := 1; attempt <= maxChangeAttempts; attempt++ {
		var outcomes []Result
		var w *shardWrite
		outcomes, w, err = s.changesInTransaction(ctx, id, batch, attempt > 1)
		if errors.Is(err, errNoBase) {
			if berr := s.EstablishBase(ctx, id, batch[0].change.Baseline); berr != nil {
				err = berr
				break
			}
			continue
		}
		if err == nil {
			if w != nil {
				s.remember([]shardWrite{*w})
			}
			for i := range batch {
				replies[i] = reply{outcome: outcomes[i]}
			}
			return replies
		}
		s.shardCounts.forget(id)
		if ctx.Err() != nil {
			break
		}
	}
	for i := range replies {
		replies[i] = reply{err: err}
	}
	return replies
}

// errNoBase: a collection counter has no complete base yet.
var errNoBase = errors.New("the collection counter has no base yet")

// changesInTransaction writes the fresh changes' sum to one shard and their keys to the ledger.
func (s *Store) changesInTransaction(ctx context.Context, id string, batch []request, verify bool) ([]Result, *shardWrite, error) {
	var outcomes []Result
	var written *shardWrite
	outer := ctx // for InBase's own transactions
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		outcomes, written = make([]Result, len(batch)), nil
		ledgers, refs := s.ledgersOf(id, batch)
		snaps, err := tx.GetAll(append([]*firestore.DocumentRef{s.schema.CounterRef(s.client, id)}, refs...))
		if err != nil {
			return fmt.Errorf("read the counter and its change ledgers: %w", err)
		}
		snap := snaps[0]
		if !snap.Exists() {
			return errNoBase
		}
		baseAt, done := baseOf(snap)
		if !done {
			return errNoBase
		}
		for _, l := range snaps[1:] {
			ledgers[l.Ref.ID].read(l)
		}
		var unseen []int
		seen := map[string]bool{}
		for i, req := range batch {
			ch := req.change
			if _, dup := ledgers[bucketID(ch.Bucket)].keys[ch.Key]; dup || seen[ch.Key] {
				outcomes[i] = Result{Duplicate: true}
				continue
			}
			seen[ch.Key] = true
			unseen = append(unseen, i)
		}
		inBase, err := inBaseAll(outer, batch, unseen, baseAt)
		if err != nil {
			return err
		}
		var fresh []int
		for k, i := range unseen {
			if inBase[k] {
				outcomes[i] = Result{InBase: true}
				continue
			}
			fresh = append(fresh, i)
		}
		if len(fresh) == 0 {
			return nil
		}
		w, err := s.planChanges(ctx, id, batch, fresh, verify)
		if err != nil {
			return err
		}
		if stamped, _ := snap.Data()[shared.FieldTouchedMinute].(int64); w.stamp && !s.requireExisting && stamped >= w.minute {
			w.stamp = false // another instance stamped this minute: no write to the counter document
		}
		for _, i := range fresh {
			inc := batch[i].incs[0]
			ledgers[bucketID(batch[i].change.Bucket)].add[batch[i].change.Key] = inc.Delta
			outcomes[i] = Result{Applied: []AppliedIncrement{{Counter: id, Delta: inc.Delta, Shard: w.shard}}, Counted: true}
		}
		ops := s.shardWriteOps(w)
		for _, l := range ledgers {
			if len(l.add) > 0 {
				ops = append(ops, s.ledgerOp(id, l))
			}
		}
		written = &w
		return addToTransaction(tx, ops)
	})
	return outcomes, written, err
}

// planChanges plans the shard write of batch's fresh changes.
func (s *Store) planChanges(ctx context.Context, id string, batch []request, fresh []int, verify bool) (shardWrite, error) {
	first := batch[fresh[0]]
	w, err := s.planShard(ctx, id, first.incs[0].Delta, first.at, verify, true)
	if err != nil {
		return shardWrite{}, err
	}
	for _, i := range fresh[1:] {
		if err := w.add(batch[i].incs[0].Delta, batch[i].at); err != nil {
			return shardWrite{}, err
		}
	}
	return w, nil
}

// ledger is one second of a collection counter's ledger: one document.
type ledger struct {
	second string
	exists bool
	keys   map[string]any   // counted
	add    map[string]int64 // to add
}

// bucketID is t's ledger second.
func bucketID(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// ledgersOf is counter id's ledgers of batch's seconds, unread, and their documents.
func (s *Store) ledgersOf(id string, batch []request) (map[string]*ledger, []*firestore.DocumentRef) {
	ledgers := map[string]*ledger{}
	var refs []*firestore.DocumentRef
	for _, req := range batch {
		second := bucketID(req.change.Bucket)
		if ledgers[second] == nil {
			ledgers[second] = &ledger{second: second, add: map[string]int64{}}
			refs = append(refs, s.ledgerRef(id, second))
		}
	}
	return ledgers, refs
}

// read takes in the ledger's document.
func (l *ledger) read(snap *firestore.DocumentSnapshot) {
	if l.exists = snap.Exists(); l.exists {
		l.keys, _ = snap.Data()[shared.FieldLedgerKeys].(map[string]any)
	}
}

// maxInBaseReads bounds the InBase calls of one batch at once.
const maxInBaseReads = 32

// inBaseAll asks, concurrently, whether each change batch[indexes[k]] is in the base read at base.
func inBaseAll(ctx context.Context, batch []request, indexes []int, base time.Time) ([]bool, error) {
	in := make([]bool, len(indexes))
	var g errgroup.Group
	g.SetLimit(maxInBaseReads)
	for k, i := range indexes {
		g.Go(func() error {
			ch := batch[i].change
			var err error
			if in[k], err = ch.InBase(ctx, base); err != nil {
				return fmt.Errorf("is change %s in the base: %w", ch.Key, err)
			}
			return nil
		})
	}
	return in, g.Wait()
}

// ledgerRef is counter id's ledger document of second.
func (s *Store) ledgerRef(id, second string) *firestore.DocumentRef {
	return s.schema.CounterRef(s.client, id).Collection(shared.ChangeLedgerCollection).Doc(second)
}

// ledgerOp adds l's new keys to its document, created when missing.
func (s *Store) ledgerOp(id string, l *ledger) op {
	expires := s.clock.Now().Add(s.dedupeTTL)
	ref := s.ledgerRef(id, l.second)
	if !l.exists {
		keys := make(map[string]any, len(l.add))
		for k, d := range l.add {
			keys[k] = d
		}
		return op{kind: opCreate, ref: ref, data: map[string]any{shared.FieldLedgerKeys: keys, shared.FieldExpiresAt: expires}}
	}
	updates := []firestore.Update{{Path: shared.FieldExpiresAt, Value: expires}}
	for k, d := range l.add {
		updates = append(updates, firestore.Update{FieldPath: firestore.FieldPath{shared.FieldLedgerKeys, k}, Value: d})
	}
	return op{kind: opUpdate, ref: ref, updates: updates}
}

// baseOf is a collection counter's base time, and whether its correction is applied.
func baseOf(snap *firestore.DocumentSnapshot) (at time.Time, done bool) {
	at, _ = snap.Data()[shared.FieldBaseAt].(time.Time)
	done, _ = snap.Data()[shared.FieldBaseDone].(bool)
	return at, done && !at.IsZero()
}

// EstablishBase makes collection counter id exact unless it has a base (an unfinished one is
// completed), configuring a missing counter with base.Settings.
func (s *Store) EstablishBase(ctx context.Context, id string, base Baseline) error {
	snap, err := s.schema.CounterRef(s.client, id).Get(ctx)
	switch {
	case status.Code(err) == codes.NotFound:
		if _, err := s.Configure(ctx, id, base.Settings); err != nil {
			return fmt.Errorf("configure collection counter %q: %w", id, err)
		}
	case err != nil:
		return fmt.Errorf("read counter %q: %w", id, err)
	default:
		if _, done := baseOf(snap); done {
			return nil
		}
		if at, _ := snap.Data()[shared.FieldBaseAt].(time.Time); !at.IsZero() {
			return s.completeBase(ctx, id, base)
		}
	}
	return s.Rebase(ctx, id, base)
}

// Rebase makes collection counter id exact at a new base time, stamping base's mirror. Safe to
// repeat and with changes in flight.
func (s *Store) Rebase(ctx context.Context, id string, base Baseline) error {
	var mirrorDoc, mirrorField any = firestore.Delete, firestore.Delete
	if base.MirrorDocument != "" {
		mirrorDoc, mirrorField = base.MirrorDocument, base.MirrorField
	}
	_, err := s.schema.CounterRef(s.client, id).Update(ctx, []firestore.Update{
		{Path: shared.FieldSource, Value: base.Source},
		{Path: shared.FieldBaseAt, Value: firestore.ServerTimestamp},
		{Path: shared.FieldBaseDone, Value: false},
		{Path: shared.FieldMirrorDocument, Value: mirrorDoc},
		{Path: shared.FieldMirrorField, Value: mirrorField},
	})
	if err != nil {
		return fmt.Errorf("stamp the base of counter %q: %w", id, err)
	}
	s.shardCounts.forget(id)
	return s.completeBase(ctx, id, base)
}

// completeBase completes counter id's pending base once: at the read time B of a snapshot showing
// its stamp, it adds base.ValueAt(B) minus the counter's value at B, and records B, unless the
// counter document changed after B. Why B and not the stamp's value: docs/collection-counters.md,
// "How it stays exact".
func (s *Store) completeBase(ctx context.Context, id string, base Baseline) error {
	for attempt := 1; ; attempt++ {
		err := s.completeBaseAt(ctx, id, base)
		if !errors.Is(err, errCounterMoved) || attempt == maxChangeAttempts {
			return err
		}
	}
}

// errCounterMoved: the counter document changed after the snapshot a base was computed at.
var errCounterMoved = errors.New("the counter document changed while its base was computed")

// completeBaseAt is one attempt of completeBase; errCounterMoved.
func (s *Store) completeBaseAt(ctx context.Context, id string, base Baseline) error {
	ref := s.schema.CounterRef(s.client, id)
	snap, err := ref.Get(ctx)
	if err != nil {
		return fmt.Errorf("read counter %q: %w", id, err)
	}
	if stamp, done := baseOf(snap); done || stamp.IsZero() {
		return nil
	}
	at := snap.ReadTime.Truncate(time.Microsecond) // Firestore's precision
	want, err := base.ValueAt(ctx, at)
	if err != nil {
		return fmt.Errorf("value of the documents of counter %q at its base: %w", id, err)
	}
	have, err := s.SumsAt(ctx, id, at, nil)
	if err != nil {
		return err
	}
	correction := want - have.Count
	err = s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		now, err := tx.Get(ref)
		if err != nil {
			return err
		}
		if _, done := baseOf(now); done {
			return nil
		}
		if !now.UpdateTime.Equal(snap.UpdateTime) {
			return errCounterMoved // a newer stamp, or a completion and a stamp
		}
		ops := []op{{kind: opUpdate, ref: ref, updates: []firestore.Update{{Path: shared.FieldBaseDone, Value: true}, {Path: shared.FieldBaseAt, Value: at}}}}
		if correction != 0 {
			w, err := s.planShard(ctx, id, correction, at, false, true)
			if err != nil {
				return err
			}
			w.parts, w.stamp = nil, false // all time only
			ops = append(ops, s.shardWriteOps(w)...)
		}
		return addToTransaction(tx, ops)
	})
	if err != nil {
		return fmt.Errorf("complete the base of counter %q: %w", id, err)
	}
	return nil
}
