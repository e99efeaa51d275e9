package sources

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// Counting turns document writes into changes of the declared counters.
type Counting struct {
	set    *Set
	store  *counter.Store
	client *firestore.Client
	log    *slog.Logger
}

// NewCounting returns a Counting of set on store, reading documents with client.
func NewCounting(set *Set, store *counter.Store, client *firestore.Client, log *slog.Logger) *Counting {
	return &Counting{set: set, store: store, client: client, log: log}
}

// Declares reports whether a declaration of c builds counter ID id: only its documents may make or
// change that counter.
func (c *Counting) Declares(id string) bool { return c.set.Declares(id) }

// Client is c's Firestore client.
func (c *Counting) Client() *firestore.Client { return c.client }

// Write is a Firestore written event: the document's Path ("posts/p1/likes/u1"), its Old (nil:
// created) and New (nil: deleted) versions, and the commit Time.
type Write struct {
	Path     string
	Old, New *firestorepb.Document
	Time     time.Time
}

// Tally is what Apply did with a write, per outcome. Refused says, per counter, why a counter ID
// named a counter its declaration did not create (counter.ErrNotItsCounter): nothing counted there.
type Tally struct {
	Counted, Duplicate, InBase, Unchanged, Unmatched int
	Refused                                          []string
}

// Apply counts w once on every counter whose documents it matches, however often it is applied; on
// error, apply it again.
func (c *Counting) Apply(ctx context.Context, w Write) (Tally, error) {
	var t Tally
	for _, d := range c.set.Declarations {
		bound, ok := d.pattern.match(w.Path)
		if !ok {
			continue
		}
		id := d.counterID(bound)
		if err := wire.ValidateWritableCounterID(id); err != nil {
			c.log.ErrorContext(ctx, "document maps to no valid counter ID; not counted", "document", w.Path, "counter", id, "error", err.Error())
			t.Unmatched++
			continue
		}
		if !d.accepts(id) {
			c.log.WarnContext(ctx, "document maps to a counter ID its counter_id_pattern (or COUNTER_ID_PATTERN) refuses; not counted", "document", w.Path, "counter", id)
			t.Unmatched++
			continue
		}
		before, after := c.contribution(ctx, d, w.Path, w.Old), c.contribution(ctx, d, w.Path, w.New)
		if before == after {
			t.Unchanged++
			continue
		}
		res, err := c.store.Apply(ctx, c.change(w, id, after-before, c.baseline(d, w.Path)))
		if errors.Is(err, counter.ErrNotItsCounter) {
			t.Refused = append(t.Refused, fmt.Sprintf("%s (declaration %s): %v", id, d.source(), err))
			continue
		}
		if err != nil {
			return t, fmt.Errorf("count %s on %q: %w", w.Path, id, err)
		}
		switch {
		case res.Counted:
			t.Counted++
		case res.Duplicate:
			t.Duplicate++
		case res.InBase:
			t.InBase++
		}
	}
	return t, nil
}

// change is w as a change of delta on counter id, keyed by the document's path and update times.
func (c *Counting) change(w Write, id string, delta int64, base counter.Baseline) counter.Request {
	oldAt, newAt := updateTime(w.Old), updateTime(w.New)
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", w.Path, oldAt.UnixNano(), newAt.UnixNano()))
	at := newAt
	if w.New == nil {
		// A delete's time is its event's: the commit time.
		at = cmp.Or(w.Time, oldAt)
	}
	inBase := func(ctx context.Context, base time.Time) (bool, error) {
		switch {
		case w.New != nil:
			return !at.After(base), nil
		case oldAt.After(base):
			return false, nil
		}
		// A delete of a version not after base: in the base unless that version was there at it.
		held, err := c.heldAt(ctx, w.Path, base, oldAt, at)
		return !held, err
	}
	return counter.Request{Counter: id, Delta: delta, At: at,
		Change: &counter.Change{Key: hex.EncodeToString(sum[:16]), InBase: inBase, Baseline: base}}
}

// heldAt reports whether path was at version at read time at; beyond version retention, whether
// deletedAt is after at.
func (c *Counting) heldAt(ctx context.Context, path string, at, version, deletedAt time.Time) (bool, error) {
	snap, err := c.client.Doc(path).WithReadOptions(firestore.ReadTime(at.Truncate(time.Microsecond))).Get(ctx)
	held := err == nil && snap.Exists() && snap.UpdateTime.Equal(version)
	if status.Code(err) == codes.NotFound {
		err = nil
	}
	switch status.Code(err) {
	case codes.OK:
		return held, nil
	case codes.FailedPrecondition, codes.InvalidArgument:
		return deletedAt.After(at), nil
	}
	return false, fmt.Errorf("read %s at %s: %w", path, at.Format(time.RFC3339Nano), err)
}

func updateTime(doc *firestorepb.Document) time.Time {
	if doc == nil {
		return time.Time{}
	}
	return doc.GetUpdateTime().AsTime()
}

// baseline is the base of d's counter of path's collection.
func (c *Counting) baseline(d *Declaration, path string) counter.Baseline {
	collection := path[:strings.LastIndex(path, "/")]
	b := counter.Baseline{Source: d.source(), Settings: d.Settings(), ValueAt: func(ctx context.Context, at time.Time) (int64, error) {
		return c.valueAt(ctx, d, collection, at)
	}}
	if d.Mirror != "" {
		bound, _ := d.pattern.match(path)
		b.MirrorDocument, b.MirrorField = expand(strings.Join(d.mirror.document, "/"), bound), strings.Join(d.mirror.field, ".")
	}
	return b
}

// valueAt is d's value of the documents in collection at read time at: count(), or the sum of
// d.Sum's values as d.summed takes them. sum() answers a double when any value is not an integer;
// the documents are then read one by one, as they are with a scale, and a value d does not sum
// counts 0, as a change counts it.
func (c *Counting) valueAt(ctx context.Context, d *Declaration, collection string, at time.Time) (int64, error) {
	q := c.client.Collection(collection).Query
	for field, want := range d.Where {
		q = q.WherePath(firestore.FieldPath{field}, "==", want)
	}
	agg := q.NewAggregationQuery().WithCount("value")
	var path firestore.FieldPath
	if d.Sum != "" {
		path, _ = fieldPath(d.Sum)
		agg = q.NewAggregationQuery().WithSumPath(path, "value")
	}
	var value int64
	err := c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if d.Scale == 0 {
			res, err := agg.Transaction(tx).Get(ctx)
			if err != nil {
				return err
			}
			v, _ := res["value"].(*firestorepb.Value)
			if n, ok := v.GetValueType().(*firestorepb.Value_IntegerValue); ok {
				value = n.IntegerValue
				return nil
			}
		}
		value = 0
		docs := tx.Documents(q.SelectPaths(path))
		defer docs.Stop()
		skipped := 0
		for {
			doc, err := docs.Next()
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				return err
			}
			n, err := doc.DataAtPath(path)
			if i, ok := d.summed(n); ok && err == nil {
				value += i
			} else if err == nil {
				skipped++
			}
		}
		if skipped > 0 {
			c.log.WarnContext(ctx, "summed field is not a number the declaration sums in some documents; counted as 0", "collection", collection, "sum", d.Sum, "scale", d.Scale, "documents", skipped)
		}
		return nil
	}, firestore.ReadOnly, firestore.TransactionReadTime(at))
	if err != nil {
		return 0, fmt.Errorf("aggregate %s at %s: %w", collection, at.Format(time.RFC3339Nano), err)
	}
	return value, nil
}

// Drift is a collection counter's Value against its Documents' aggregation, both At one read time.
type Drift struct {
	Counter, Collection string
	At                  time.Time
	Value, Documents    int64
}

// kept is a collection counter's declaration, the collection it counts, and whether the counter
// exists yet.
type kept struct {
	d          *Declaration
	collection string
	exists     bool
}

// find returns what keeps counter id: the declaration the counter records, or for a missing counter
// the one whose template makes id.
func (c *Counting) find(ctx context.Context, id string) (kept, error) {
	snap, err := c.store.CounterRef(id).Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return kept{}, err
	}
	var recorded string
	if err == nil {
		var ok bool
		if recorded, ok = snap.Data()[shared.FieldSource].(string); !ok {
			return kept{}, fmt.Errorf("counter %q is not a collection counter: %w", id, counter.ErrNotItsCounter)
		}
	}
	for _, d := range c.set.Declarations {
		if recorded != "" && d.source() != recorded {
			continue
		}
		if bound, ok := d.matchCounter(id); ok {
			doc := expand(strings.Join(d.pattern, "/"), bound)
			return kept{d: d, collection: doc[:strings.LastIndex(doc, "/")], exists: err == nil}, nil
		}
	}
	if recorded != "" {
		return kept{}, fmt.Errorf("counter %q counts %q, which this deployment no longer declares", id, recorded)
	}
	return kept{}, fmt.Errorf("counter %q is kept by no declaration", id)
}

// baselineOf is the base of the counter k keeps.
func (c *Counting) baselineOf(k kept) counter.Baseline { return c.baseline(k.d, k.collection+"/x") }

// Verify compares counter id with its documents at read time at (within version retention): a
// difference is drift, or changes not yet counted.
func (c *Counting) Verify(ctx context.Context, id string, at time.Time) (Drift, error) {
	k, err := c.find(ctx, id)
	if err != nil {
		return Drift{}, err
	}
	at = at.Truncate(time.Microsecond)
	docs, err := c.valueAt(ctx, k.d, k.collection, at)
	if err != nil {
		return Drift{}, err
	}
	sums, err := c.store.SumsAt(ctx, id, at, nil)
	if err != nil {
		return Drift{}, err
	}
	return Drift{Counter: id, Collection: k.collection, At: at, Value: sums.Count, Documents: docs}, nil
}

// Repair makes counter id exact again (counter.Store.Rebase), safely while changes are in flight;
// a missing counter is created and based.
func (c *Counting) Repair(ctx context.Context, id string) error {
	k, err := c.find(ctx, id)
	if err != nil {
		return err
	}
	if !k.exists {
		return c.store.EstablishBase(ctx, id, c.baselineOf(k))
	}
	return c.store.Rebase(ctx, id, c.baselineOf(k))
}

// maxQuietChecks bounds the collection counters one DriftOfQuiet call verifies.
const maxQuietChecks = 20

// DriftCheck is what one DriftOfQuiet call found: the counters that differ from their documents,
// and those it could not verify (Unverified: counter ID → why), skipped.
type DriftCheck struct {
	Drifts     []Drift
	Unverified map[string]string
}

// Fields of the drift check's cursor document: the last counter checked, with its touched minute.
const (
	fieldCursorMinute  = "minute"
	fieldCursorCounter = "counter"
)

// DriftOfQuiet verifies, in order of last write then ID, up to maxQuietChecks collection counters
// last written between lookback and quiet ago (no event should be in flight), starting after the
// counter cursor names and moving cursor past them, so each quiet counter is verified once, within
// quiet plus a minute per maxQuietChecks counters ahead of it (docs/collection-counters.md).
func (c *Counting) DriftOfQuiet(ctx context.Context, counters *firestore.CollectionRef, cursor *firestore.DocumentRef, now time.Time, quiet, lookback time.Duration) (DriftCheck, error) {
	check := DriftCheck{Unverified: map[string]string{}}
	if len(c.set.Declarations) == 0 {
		return check, nil
	}
	from, to := shared.UnixMinute(now.Add(-lookback)), shared.UnixMinute(now.Add(-quiet))
	q := counters.Where(shared.FieldTouchedMinute, ">=", from).Where(shared.FieldTouchedMinute, "<=", to).
		OrderBy(shared.FieldTouchedMinute, firestore.Asc).OrderBy(firestore.DocumentID, firestore.Asc)
	last, err := cursor.Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return check, fmt.Errorf("read the drift check's cursor: %w", err)
	}
	if minute, _ := last.Data()[fieldCursorMinute].(int64); err == nil && minute >= from {
		q = q.StartAfter(minute, last.Data()[fieldCursorCounter])
	}
	snaps, err := q.Limit(200).Documents(ctx).GetAll()
	if err != nil {
		return check, fmt.Errorf("find quiet collection counters: %w", err)
	}
	checked := 0
	var at *firestore.DocumentSnapshot // the last counter passed
	for _, snap := range snaps {
		if checked == maxQuietChecks {
			break
		}
		at = snap
		if _, ok := snap.Data()[shared.FieldSource]; !ok {
			continue
		}
		checked++
		d, err := c.Verify(ctx, snap.Ref.ID, now)
		switch {
		case err != nil:
			check.Unverified[snap.Ref.ID] = err.Error()
		case d.Value != d.Documents:
			check.Drifts = append(check.Drifts, d)
		}
	}
	if at == nil {
		return check, nil
	}
	minute, _ := at.Data()[shared.FieldTouchedMinute].(int64)
	if _, err := cursor.Set(ctx, map[string]any{fieldCursorMinute: minute, fieldCursorCounter: at.Ref.ID}); err != nil {
		return check, fmt.Errorf("move the drift check's cursor: %w", err)
	}
	return check, nil
}
