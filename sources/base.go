package sources

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// A collection counter's base: the exact value of its documents at one read time, from which its
// changes count. See docs/collection-counters.md, "How it stays exact".

// baseline is what a collection counter starts from: the declaration and scope that build it.
type baseline struct {
	d  *Declaration
	sc scope
}

// source names the declaration: only its changes change the counter.
func (b baseline) source() string { return b.d.source() }

// errNoBase: a collection counter has no complete base yet.
var errNoBase = errors.New("the collection counter has no base yet")

// errCounterMoved: the counter document changed after the snapshot a base was computed at.
var errCounterMoved = errors.New("the counter document changed while its base was computed")

// SameSource reports whether a counter recording source (shared.FieldSource) is the declaration's
// named want; a record of "want of DOCUMENTS" (before declarations were named by their counter
// template alone) is too.
func SameSource(source, want string) bool {
	return source == want || strings.HasPrefix(source, want+" of ")
}

// DefinitionOf is the definition a collection counter's base was taken under (Declaration.definition).
func DefinitionOf(snap *firestore.DocumentSnapshot) string {
	d, _ := snap.Data()[shared.FieldSourceDefinition].(string)
	return d
}

// baseOf is a collection counter's base time, and whether its correction is applied.
func baseOf(snap *firestore.DocumentSnapshot) (at time.Time, done bool) {
	at, _ = snap.Data()[shared.FieldBaseAt].(time.Time)
	done, _ = snap.Data()[shared.FieldBaseDone].(bool)
	return at, done && !at.IsZero()
}

// changeBase is collection counter id's complete base and the declaration it counts (an ordinary
// counter: ""), establishing a base with b first when it has none, and rebasing it under b's
// definition when it was taken under another.
func (c *Counting) changeBase(ctx context.Context, id string, b baseline) (time.Time, string, error) {
	for range 2 {
		snap, err := c.reader.CounterRef(id).Get(ctx)
		if err != nil && status.Code(err) != codes.NotFound {
			return time.Time{}, "", fmt.Errorf("read counter %q: %w", id, err)
		}
		mode := stampIfNone
		if err == nil {
			source, _ := snap.Data()[shared.FieldSource].(string)
			at, done := baseOf(snap)
			if !SameSource(source, b.source()) || done && DefinitionOf(snap) == b.d.definition() {
				return at, source, nil
			}
			if done {
				mode = stampIfRedefined
			}
		}
		if err := c.establishBase(ctx, id, b, mode); err != nil {
			return time.Time{}, "", err
		}
	}
	return time.Time{}, "", errNoBase
}

// establishBase makes collection counter id exact unless it has a base (an unfinished one is
// completed), configuring a missing counter with b's settings, stamping as mode says. Of instances
// establishing one counter's base at once, one stamps it and all complete that stamp.
func (c *Counting) establishBase(ctx context.Context, id string, b baseline, mode stampMode) error {
	_, err := c.reader.CounterRef(id).Get(ctx)
	switch {
	case status.Code(err) == codes.NotFound:
		if err := c.collections.CreateCollectionCounter(ctx, id, b.d.Settings(), b.source()); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("read counter %q: %w", id, err)
	}
	if err := c.stampBase(ctx, id, b, mode); err != nil {
		return err
	}
	return c.completeBase(ctx, id, b)
}

// rebase makes collection counter id exact at a new base time, stamping b's mirror. Safe to
// repeat and with changes in flight.
func (c *Counting) rebase(ctx context.Context, id string, b baseline) error {
	if err := c.stampBase(ctx, id, b, stampAlways); err != nil {
		return err
	}
	return c.completeBase(ctx, id, b)
}

// stampMode says which counters stampBase stamps.
type stampMode int

const (
	stampIfNone      stampMode = iota // a counter with no base, pending or complete
	stampIfRedefined                  // also one based under another definition
	stampAlways
)

// stampBase stamps counter id, as mode says, with a pending base and b's definition and mirror.
func (c *Counting) stampBase(ctx context.Context, id string, b baseline, mode stampMode) error {
	var mirrorDoc, mirrorField any = firestore.Delete, firestore.Delete
	if doc, ok := b.d.mirrorDocument(b.sc); ok {
		mirrorDoc, mirrorField = doc, strings.Join(b.d.mirror.field, ".")
	}
	ref := c.reader.CounterRef(id)
	err := c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(ref)
		if err != nil {
			return err
		}
		if source, _ := snap.Data()[shared.FieldSource].(string); !SameSource(source, b.source()) {
			return fmt.Errorf("counter %q counts %q: %w", id, source, ErrNotItsCounter)
		}
		at, _ := snap.Data()[shared.FieldBaseAt].(time.Time)
		switch {
		case at.IsZero() || mode == stampAlways:
		case mode == stampIfRedefined && DefinitionOf(snap) != b.d.definition():
		default:
			return nil
		}
		return tx.Update(ref, []firestore.Update{
			{Path: shared.FieldBaseAt, Value: firestore.ServerTimestamp},
			{Path: shared.FieldBaseDone, Value: false},
			{Path: shared.FieldSourceDefinition, Value: b.d.definition()},
			{Path: shared.FieldMirrorDocument, Value: mirrorDoc},
			{Path: shared.FieldMirrorField, Value: mirrorField},
		})
	})
	if err != nil {
		return fmt.Errorf("stamp the base of counter %q: %w", id, err)
	}
	c.collections.Reconfigured(id)
	return nil
}

// completeBase completes counter id's pending base once: at the read time B of a snapshot showing
// its stamp, it adds the documents' value at B minus the counter's value at B, and records B,
// unless the counter document changed after B. Why B and not the stamp's value:
// docs/collection-counters.md, "How it stays exact".
func (c *Counting) completeBase(ctx context.Context, id string, b baseline) error {
	for attempt := 1; ; attempt++ {
		err := c.completeBaseAt(ctx, id, b)
		if !errors.Is(err, errCounterMoved) || attempt == maxChangeAttempts {
			return err
		}
	}
}

// completeBaseAt is one attempt of completeBase; errCounterMoved.
func (c *Counting) completeBaseAt(ctx context.Context, id string, b baseline) error {
	ref := c.reader.CounterRef(id)
	snap, err := ref.Get(ctx)
	if err != nil {
		return fmt.Errorf("read counter %q: %w", id, err)
	}
	if stamp, done := baseOf(snap); done || stamp.IsZero() {
		return nil
	}
	at := snap.ReadTime.Truncate(time.Microsecond) // Firestore's precision
	want, err := c.valueAt(ctx, b.d, b.sc, at)
	if err != nil {
		return fmt.Errorf("value of the documents of counter %q at its base: %w", id, err)
	}
	if c.afterBaseValue != nil {
		c.afterBaseValue()
	}
	have, err := c.reader.SumsAt(ctx, id, at, nil)
	if err != nil {
		return err
	}
	correction := new(big.Int).Sub(big.NewInt(want.counted()), big.NewInt(have.Count))
	err = c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
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
		var sum *baseSum
		if b.d.Sum != "" {
			if sum, err = c.readBaseSum(tx, now, id); err != nil {
				return err
			}
		}
		// Reads done; writes follow.
		updates := []firestore.Update{{Path: shared.FieldBaseDone, Value: true}, {Path: shared.FieldBaseAt, Value: at}}
		var counts map[int]int64
		if sum != nil {
			var flags []firestore.Update
			counts, flags = sum.counts(want.counted(), want.over)
			updates = append(updates, flags...)
			if err := sum.replaceRecords(c, tx, id, want.over); err != nil {
				return err
			}
		}
		if correction.Sign() != 0 {
			// The sweep rolls it up should the trigger's event be lost.
			updates = append(updates, firestore.Update{Path: shared.FieldTouchedMinute, Value: shared.UnixMinute(c.clock.Now())})
		}
		if err := tx.Update(ref, updates); err != nil || correction.Sign() == 0 && counts == nil {
			return err
		}
		w, err := c.collections.PlanCorrection(ctx, id, correction.Int64(), at) // a count's fits; a sum's are set
		if err != nil {
			return err
		}
		if counts != nil {
			if err := w.SetCounts(counts, nil); err != nil {
				return err
			}
		}
		return w.AddTo(tx)
	})
	if err != nil {
		return fmt.Errorf("complete the base of counter %q: %w", id, err)
	}
	return nil
}
