package counter

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	// InBase reports whether the base read at base holds the change.
	InBase   func(ctx context.Context, base time.Time) (bool, error)
	Baseline Baseline // for a counter without a base
}

// Baseline is what a collection counter starts from.
type Baseline struct {
	Source string // the declaration's name: only its changes change the counter
	// Definition fingerprints what the declaration counts: a counter based under another is
	// rebased under this one before its change counts.
	Definition string
	Settings   Settings // for a new counter
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
	rep := s.submit(ctx, batched{incs: r.increments(), at: r.At, change: ch})
	if rep.err != nil {
		return Result{}, fmt.Errorf("change %s of counter %q: %w", ch.Key, r.Counter, rep.err)
	}
	return rep.outcome, nil
}

// maxChangeAttempts bounds the failed transactions of one batch of changes; a commit that finds
// records of some changes (AlreadyExists) is not one: it answers them, and the rest commit again.
const maxChangeAttempts = 5

// commitChanges counts batch's changes, all of one counter: each change not in the base gets a
// record of its own, created in the transaction that adds its delta to a shard. See
// docs/collection-counters.md, "How it stays exact".
func (s *Store) commitChanges(ctx context.Context, batch []batched) []reply {
	replies := make([]reply, len(batch))
	id := batch[0].incs[0].Counter
	open := firstOfEachKey(batch, replies)
	inBase := map[int]bool{} // of open's changes, judged at judgedAt
	var judgedAt time.Time
	var err error
	for failures := 0; failures < maxChangeAttempts && len(open) > 0; {
		var base time.Time
		var source string
		if base, source, err = s.changeBase(ctx, id, batch[open[0]].change.Baseline); err != nil {
			break
		}
		open = refuseOthers(batch, open, source, replies)
		if !base.Equal(judgedAt) {
			var in []bool
			if in, err = inBaseAll(ctx, batch, open, base); err != nil {
				break
			}
			for k, i := range open {
				inBase[i] = in[k]
			}
			judgedAt = base
		}
		var fresh []int
		for _, i := range open {
			if !inBase[i] {
				fresh = append(fresh, i)
			}
		}
		var w *shardWrite
		w, err = s.changesInTransaction(ctx, id, batch, fresh, base, failures > 0)
		if err == nil {
			if w != nil {
				s.remember([]shardWrite{*w})
			}
			for _, i := range open {
				replies[i] = reply{outcome: Result{InBase: true}}
				if !inBase[i] {
					replies[i] = reply{outcome: Result{Applied: []AppliedIncrement{{Counter: id, Delta: batch[i].incs[0].Delta, Shard: w.shard}}, Counted: true}}
				}
			}
			return replies
		}
		if errors.Is(err, ErrNotItsCounter) {
			continue // the counter changed hands: refuseOthers answers
		}
		if status.Code(err) == codes.AlreadyExists {
			// Another delivery of some change committed first: answer those, commit the rest.
			if open, err = s.takeOutRecorded(ctx, id, batch, open, replies); err != nil {
				break
			}
			continue
		}
		failures++
		if !errors.Is(err, errBaseMoved) {
			s.configs.forget(id)
		}
		if ctx.Err() != nil {
			break
		}
	}
	for _, i := range open {
		replies[i] = reply{err: err}
	}
	return replies
}

// refuseOthers answers the changes of batch at open that source's declaration did not make with
// ErrNotItsCounter, and returns the others.
func refuseOthers(batch []batched, open []int, source string, replies []reply) []int {
	var mine []int
	for _, i := range open {
		if !SameSource(source, batch[i].change.Baseline.Source) {
			replies[i] = reply{err: fmt.Errorf("counter %q counts %q: %w", batch[i].incs[0].Counter, source, ErrNotItsCounter)}
			continue
		}
		mine = append(mine, i)
	}
	return mine
}

// firstOfEachKey answers each later delivery of a change in batch as a duplicate and returns the
// indexes of the first ones.
func firstOfEachKey(batch []batched, replies []reply) []int {
	var first []int
	seen := map[string]bool{}
	for i, req := range batch {
		if seen[req.change.Key] {
			replies[i] = reply{outcome: Result{Duplicate: true}}
			continue
		}
		seen[req.change.Key] = true
		first = append(first, i)
	}
	return first
}

// ErrDeclared refuses an operator action that would make a collection counter differ from its
// documents, or change what its declaration owns: reset, windows, distinct, group.
var ErrDeclared = errors.New("the counter counts documents (a collection counter): its value follows its documents and its declaration sets its windows and group")

// ErrNotItsCounter refuses a change of a counter its declaration did not create: an ordinary
// counter, or another declaration's. Such a change never counts.
var ErrNotItsCounter = errors.New("the counter is not a collection counter of the change's declaration")

// errNoBase: a collection counter has no complete base yet.
var errNoBase = errors.New("the collection counter has no base yet")

// errBaseMoved: the counter's base changed after its changes were judged against it.
var errBaseMoved = errors.New("the collection counter's base changed while its changes were judged")

// SameSource reports whether a counter recording source (shared.FieldSource) is the declaration's
// named want; a record of "want of DOCUMENTS" (before declarations were named by their counter
// template alone) is too.
func SameSource(source, want string) bool {
	return source == want || strings.HasPrefix(source, want+" of ")
}

// changeBase is collection counter id's complete base and the declaration it counts (an ordinary
// counter: ""), establishing a base with baseline first when it has none, and rebasing it under
// baseline's definition when it was taken under another.
func (s *Store) changeBase(ctx context.Context, id string, baseline Baseline) (time.Time, string, error) {
	for range 2 {
		snap, err := s.schema.CounterRef(s.client, id).Get(ctx)
		if err != nil && status.Code(err) != codes.NotFound {
			return time.Time{}, "", fmt.Errorf("read counter %q: %w", id, err)
		}
		mode := stampIfNone
		if err == nil {
			source, _ := snap.Data()[shared.FieldSource].(string)
			at, done := baseOf(snap)
			if !SameSource(source, baseline.Source) || done && DefinitionOf(snap) == baseline.Definition {
				return at, source, nil
			}
			if done {
				mode = stampIfRedefined
			}
		}
		if err := s.establishBase(ctx, id, baseline, mode); err != nil {
			return time.Time{}, "", err
		}
	}
	return time.Time{}, "", errNoBase
}

// DefinitionOf is the definition a collection counter's base was taken under (Baseline.Definition).
func DefinitionOf(snap *firestore.DocumentSnapshot) string {
	d, _ := snap.Data()[shared.FieldSourceDefinition].(string)
	return d
}

// changesInTransaction adds the fresh changes' deltas to one shard and creates their records, in one
// transaction that holds the counter at base; errBaseMoved, or AlreadyExists when a record exists.
// With no fresh change it only checks the base.
func (s *Store) changesInTransaction(ctx context.Context, id string, batch []batched, fresh []int, base time.Time, verify bool) (*shardWrite, error) {
	var written *shardWrite
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		written = nil
		snap, err := tx.Get(s.schema.CounterRef(s.client, id))
		if status.Code(err) == codes.NotFound {
			return errBaseMoved
		}
		if err != nil {
			return fmt.Errorf("read the counter: %w", err)
		}
		if source, _ := snap.Data()[shared.FieldSource].(string); len(fresh) > 0 && !SameSource(source, batch[fresh[0]].change.Baseline.Source) {
			return ErrNotItsCounter
		}
		if at, done := baseOf(snap); !done || !at.Equal(base) {
			return errBaseMoved
		}
		if len(fresh) == 0 {
			return nil
		}
		w, err := s.planChanges(ctx, id, batch, fresh, verify)
		if errors.Is(err, errNoBase) {
			return errBaseMoved // the cached configuration predates the counter's conversion
		}
		if err != nil {
			return err
		}
		if stamped, _ := snap.Data()[shared.FieldTouchedMinute].(int64); w.stamp && !s.requireExisting && stamped >= w.minute {
			w.stamp = false // another instance stamped this minute: no write to the counter document
		}
		ops := s.shardWriteOps(w)
		expires := s.clock.Now().Add(changeRecordTTL)
		for _, i := range fresh {
			ops = append(ops, op{kind: opCreate, ref: s.changeRecordRef(id, batch[i].change.Key),
				data: map[string]any{shared.FieldChangeDelta: batch[i].incs[0].Delta, shared.FieldExpiresAt: expires}})
		}
		written = &w
		return addToTransaction(tx, ops)
	})
	if errors.Is(err, errBaseMoved) {
		s.configs.forget(id)
	}
	return written, err
}

// takeOutRecorded answers the changes of batch at open whose records exist as duplicates and
// returns the others; open and an error when none exists.
func (s *Store) takeOutRecorded(ctx context.Context, id string, batch []batched, open []int, replies []reply) ([]int, error) {
	refs := make([]*firestore.DocumentRef, len(open))
	for k, i := range open {
		refs[k] = s.changeRecordRef(id, batch[i].change.Key)
	}
	snaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return open, fmt.Errorf("read the change records of counter %q: %w", id, err)
	}
	var rest []int
	for k, i := range open {
		if snaps[k].Exists() {
			replies[i] = reply{outcome: Result{Duplicate: true}}
		} else {
			rest = append(rest, i)
		}
	}
	if len(rest) == len(open) {
		return open, fmt.Errorf("commit the changes of counter %q: a record already existed, yet none does now", id)
	}
	return rest, nil
}

// planChanges plans the shard write of batch's fresh changes.
func (s *Store) planChanges(ctx context.Context, id string, batch []batched, fresh []int, verify bool) (shardWrite, error) {
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

// changeRecordTTL is how long a change's record is kept: past Eventarc's 24 h of redeliveries.
const changeRecordTTL = 25 * time.Hour

// maxInBaseReads bounds the InBase calls of one batch at once.
const maxInBaseReads = 32

// inBaseAll asks, concurrently, whether each change batch[indexes[k]] is in the base read at base.
func inBaseAll(ctx context.Context, batch []batched, indexes []int, base time.Time) ([]bool, error) {
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

// changeRecordRef is the record of counter id's change key.
func (s *Store) changeRecordRef(id, key string) *firestore.DocumentRef {
	return s.schema.CounterRef(s.client, id).Collection(shared.ChangeLedgerCollection).Doc(key)
}

// baseOf is a collection counter's base time, and whether its correction is applied.
func baseOf(snap *firestore.DocumentSnapshot) (at time.Time, done bool) {
	at, _ = snap.Data()[shared.FieldBaseAt].(time.Time)
	done, _ = snap.Data()[shared.FieldBaseDone].(bool)
	return at, done && !at.IsZero()
}

// EstablishBase makes collection counter id exact unless it has a base (an unfinished one is
// completed), configuring a missing counter with base.Settings. Of instances establishing one
// counter's base at once, one stamps it and all complete that stamp.
func (s *Store) EstablishBase(ctx context.Context, id string, base Baseline) error {
	return s.establishBase(ctx, id, base, stampIfNone)
}

// establishBase is EstablishBase, stamping the base as mode says.
func (s *Store) establishBase(ctx context.Context, id string, base Baseline, mode stampMode) error {
	_, err := s.schema.CounterRef(s.client, id).Get(ctx)
	switch {
	case status.Code(err) == codes.NotFound:
		st := base.Settings
		st.source = base.Source
		if _, err := s.Configure(ctx, id, st); err != nil {
			return fmt.Errorf("configure collection counter %q: %w", id, err)
		}
	case err != nil:
		return fmt.Errorf("read counter %q: %w", id, err)
	}
	if err := s.stampBase(ctx, id, base, mode); err != nil {
		return err
	}
	return s.completeBase(ctx, id, base)
}

// Rebase makes collection counter id exact at a new base time, stamping base's mirror. Safe to
// repeat and with changes in flight.
func (s *Store) Rebase(ctx context.Context, id string, base Baseline) error {
	if err := s.stampBase(ctx, id, base, stampAlways); err != nil {
		return err
	}
	return s.completeBase(ctx, id, base)
}

// stampMode says which counters stampBase stamps.
type stampMode int

const (
	stampIfNone      stampMode = iota // a counter with no base, pending or complete
	stampIfRedefined                  // also one based under another definition
	stampAlways
)

// stampBase stamps counter id, as mode says, with a pending base and base's definition and mirror.
func (s *Store) stampBase(ctx context.Context, id string, base Baseline, mode stampMode) error {
	var mirrorDoc, mirrorField any = firestore.Delete, firestore.Delete
	if base.MirrorDocument != "" {
		mirrorDoc, mirrorField = base.MirrorDocument, base.MirrorField
	}
	ref := s.schema.CounterRef(s.client, id)
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(ref)
		if err != nil {
			return err
		}
		if source, _ := snap.Data()[shared.FieldSource].(string); !SameSource(source, base.Source) {
			return fmt.Errorf("counter %q counts %q: %w", id, source, ErrNotItsCounter)
		}
		at, _ := snap.Data()[shared.FieldBaseAt].(time.Time)
		switch {
		case at.IsZero() || mode == stampAlways:
		case mode == stampIfRedefined && DefinitionOf(snap) != base.Definition:
		default:
			return nil
		}
		return tx.Update(ref, []firestore.Update{
			{Path: shared.FieldBaseAt, Value: firestore.ServerTimestamp},
			{Path: shared.FieldBaseDone, Value: false},
			{Path: shared.FieldSourceDefinition, Value: base.Definition},
			{Path: shared.FieldMirrorDocument, Value: mirrorDoc},
			{Path: shared.FieldMirrorField, Value: mirrorField},
		})
	})
	if err != nil {
		return fmt.Errorf("stamp the base of counter %q: %w", id, err)
	}
	s.configs.forget(id)
	return nil
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
		updates := []firestore.Update{{Path: shared.FieldBaseDone, Value: true}, {Path: shared.FieldBaseAt, Value: at}}
		if correction != 0 { // the sweep rolls it up should the trigger's event be lost
			updates = append(updates, firestore.Update{Path: shared.FieldTouchedMinute, Value: shared.UnixMinute(s.clock.Now())})
		}
		ops := []op{{kind: opUpdate, ref: ref, updates: updates}}
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
