package sources

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"strings"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/gate"
	"github.com/shardcount/counters/groupcommit"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/shared/clock"
)

// Counting turns document writes into changes of the declared counters.
type Counting struct {
	set         *Set
	collections *counter.Collections
	reader      *counter.Reader
	client      *firestore.Client
	log         *slog.Logger
	clock       clock.Clock
	changes     *groupcommit.Committer[change, changeReply] // nil: one transaction per change
	every       time.Duration                               // NewCounting's commitInterval
	life        gate.Gate                                   // admits changes until Close

	afterBaseValue func() // tests: runs once completeBaseAt has the documents' value
}

// NewCounting returns a Counting of set on store, reading documents with client, committing a
// counter's changes at most once per commitInterval (0: each at once).
func NewCounting(set *Set, store *counter.Store, client *firestore.Client, log *slog.Logger, commitInterval time.Duration) *Counting {
	return newCounting(set, store.Collections, store.Reader, client, log, commitInterval)
}

func newCounting(set *Set, collections *counter.Collections, reader *counter.Reader, client *firestore.Client, log *slog.Logger, commitInterval time.Duration) *Counting {
	c := &Counting{set: set, collections: collections, reader: reader, client: client, log: log, clock: clock.System{}, every: commitInterval}
	if commitInterval > 0 {
		c.changes = c.newChangeCommitter(commitInterval)
	}
	return c
}

// Of is a Counting of set on c's counters and client, with c's log and commit interval.
func (c *Counting) Of(set *Set) *Counting {
	return newCounting(set, c.collections, c.reader, c.client, c.log, c.every)
}

// Close refuses new changes (counter.ErrClosed), commits held ones at once, and returns when every
// taken change has its outcome, or with ctx's error.
func (c *Counting) Close(ctx context.Context) error {
	c.life.Close()
	if c.changes != nil {
		c.changes.Flush()
	}
	if err := c.life.Wait(ctx); err != nil {
		return fmt.Errorf("close counting: changes still waiting for their commits: %w", err)
	}
	return nil
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

// Outcomes is what Count did with a write, per outcome. Refused says, per counter, why a counter ID
// named a counter its declaration did not create (ErrNotItsCounter): nothing counted there. Probe:
// the write was a probe document's (SeeProbe), counted nowhere.
type Outcomes struct {
	Counted, Duplicate, InBase, Unchanged, Unmatched int
	// OutOfRange counts changes a sum counter took otherwise than in full, to stay within int64
	// (logged at ERROR): docs/collection-counters.md, "How it stays exact".
	OutOfRange int
	Refused    []string
	Probe      bool
}

// Count counts w once on every counter whose documents it matches, however often it is delivered; on
// error, count it again. An update that changes a counter field ({field:PATH}) moves the document:
// its old contribution leaves the old value's counter, its new one joins the new value's.
func (c *Counting) Count(ctx context.Context, w Write) (Outcomes, error) {
	t := Outcomes{Probe: c.set.isProbe(w.Path)}
	if t.Probe {
		return t, nil
	}
	for _, d := range c.set.Declarations {
		bound, ok := d.pattern.match(w.Path)
		if !ok {
			continue
		}
		before, after := c.side(ctx, d, w.Path, bound, w.Old), c.side(ctx, d, w.Path, bound, w.New)
		if before.id == "" && after.id == "" {
			t.Unmatched++
			continue
		}
		counted := false
		for _, ch := range moves(before, after) {
			if ch.id == "" || ch.delta == 0 {
				continue
			}
			counted = true
			res := c.commit(ctx, c.change(w, ch, baseline{d: d, sc: ch.sc}))
			err := res.err
			if err != nil {
				err = fmt.Errorf("change of counter %q: %w", ch.id, err)
			}
			if errors.Is(err, ErrNotItsCounter) {
				t.Refused = append(t.Refused, fmt.Sprintf("%s (declaration %s): %v", ch.id, d.source(), err))
				continue
			}
			if err != nil {
				return t, fmt.Errorf("count %s on %q: %w", w.Path, ch.id, err)
			}
			if res.outOfRange {
				t.OutOfRange++
				c.log.ErrorContext(ctx, "counting the change in full would take the sum past int64; the document counts 0, or as before", "document", w.Path, "counter", ch.id, "sum", d.Sum)
			}
			switch {
			case res.counted:
				t.Counted++
			case res.duplicate:
				t.Duplicate++
			case res.inBase:
				t.InBase++
			}
		}
		if !counted {
			t.Unchanged++
		}
	}
	return t, nil
}

// side is one version of a document in one declaration: its counter (id "": none) and what it adds.
type side struct {
	id    string
	sc    scope
	value int64
}

// side is doc (nil: none) in d, its path's wildcards bound: no counter when doc is nil, or its ID
// would be no valid one, or d refuses it (logged).
func (c *Counting) side(ctx context.Context, d *Declaration, path string, bound map[string]string, doc *firestorepb.Document) side {
	if doc == nil {
		return side{}
	}
	fields, why := d.fieldsOf(protoField(doc))
	if why != "" {
		c.log.WarnContext(ctx, "document has no value to count it by; not counted", "document", path, "counter", d.Counter, "reason", why)
		return side{}
	}
	sc := scope{bound: bound, fields: fields}
	id := d.counterID(sc)
	if err := wire.ValidateWritableCounterID(id); err != nil {
		c.log.ErrorContext(ctx, "document maps to no valid counter ID; not counted", "document", path, "counter", id, "error", err.Error())
		return side{}
	}
	if !d.accepts(id) {
		c.log.WarnContext(ctx, "document maps to a counter ID its counter_id_pattern (or COUNTER_ID_PATTERN) refuses; not counted", "document", path, "counter", id)
		return side{}
	}
	return side{id: id, sc: sc, value: c.contribution(ctx, d, path, doc)}
}

// move is a write's change of one counter: delta, leaving the document adding value.
type move struct {
	side
	delta int64
	part  string // tells apart the halves of a change whose delta would leave int64
}

// moves are the changes of the counters of a document's versions before and after a write: one
// counter's change by after's value minus before's, as two halves when that leaves int64 (both
// values are within ±MaxInt64); or before's counter losing its value and after's gaining its own.
func moves(before, after side) []move {
	if before.id != after.id {
		return []move{{side: side{id: before.id, sc: before.sc}, delta: -before.value}, {side: after, delta: after.value}}
	}
	delta := after.value - before.value
	if (delta < after.value) == (before.value > 0) {
		return []move{{side: after, delta: delta}}
	}
	return []move{{side: side{id: after.id, sc: after.sc}, delta: -before.value, part: "out"}, {side: after, delta: after.value, part: "in"}}
}

// change is m of w, keyed by the document's path and update times (and m's part).
func (c *Counting) change(w Write, m move, b baseline) change {
	oldAt, newAt := updateTime(w.Old), updateTime(w.New)
	key := fmt.Appendf(nil, "%s\x00%d\x00%d", w.Path, oldAt.UnixNano(), newAt.UnixNano())
	if m.part != "" {
		key = fmt.Appendf(key, "\x00%s", m.part)
	}
	sum := sha256.Sum256(key)
	at := newAt
	if w.New == nil {
		// A delete's time is its event's: the commit time.
		at = cmp.Or(w.Time, oldAt)
	}
	return change{counter: m.id, key: hex.EncodeToString(sum[:16]), delta: m.delta, value: m.value, at: at, write: w, base: b}
}

// inBase reports whether the base read at base holds ch.
func (c *Counting) inBase(ctx context.Context, ch change, base time.Time) (bool, error) {
	oldAt := updateTime(ch.write.Old)
	switch {
	case ch.write.New != nil:
		return !ch.at.After(base), nil
	case oldAt.After(base):
		return false, nil
	}
	// A delete of a version not after base: in the base unless that version was there at it.
	held, err := c.heldAt(ctx, ch.write.Path, base, oldAt, ch.at)
	return !held, err
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

// mirrorDocument is the path of the mirror of d's counter of sc; false without a mirror, or when a
// counter field's value is no document ID (that counter has none).
func (d *Declaration) mirrorDocument(sc scope) (string, bool) {
	if d.Mirror == "" {
		return "", false
	}
	values := maps.Clone(sc.bound)
	for name, v := range sc.fields {
		id := fmt.Sprint(v)
		if wire.ValidateCounterID(id) != nil { // a document ID's rules
			return "", false
		}
		values[name] = id
	}
	return expand(strings.Join(d.mirror.document, "/"), values), true
}

// collection is the path of the collection whose documents d's counter of sc counts.
func (d *Declaration) collection(sc scope) string {
	return expand(strings.Join(d.pattern[:len(d.pattern)-1], "/"), sc.bound)
}

// documents is d's value of the documents of a counter at one read time: their total, exact; and
// when that leaves int64, the documents left out (path → value, first ones kept) so the rest fit.
type documents struct {
	total big.Int
	over  map[string]int64
}

// counted is the total of the documents not over: what the counter counts after a base.
func (v *documents) counted() int64 {
	kept := new(big.Int).Set(&v.total)
	for _, n := range v.over {
		kept.Sub(kept, big.NewInt(n))
	}
	return kept.Int64()
}

// valueAt is d's value of the documents of sc at read time at: count(), or the sum of d.Sum's
// values as d.summed takes them. sum() answers a double when any value is not an integer, or the
// sum leaves int64; the documents are then read one by one, as they are with a scale, and a value
// d does not sum counts 0, as a change counts it.
func (c *Counting) valueAt(ctx context.Context, d *Declaration, sc scope, at time.Time) (*documents, error) {
	collection := d.collection(sc)
	q := d.Where.query(c.client.Collection(collection).Query)
	for name, v := range sc.fields {
		path, _ := fieldPath(strings.TrimPrefix(name, fieldPrefix))
		q = q.WherePath(path, "==", v)
	}
	agg := q.NewAggregationQuery().WithCount("value")
	var path firestore.FieldPath
	if d.Sum != "" {
		path, _ = fieldPath(d.Sum)
		agg = q.NewAggregationQuery().WithSumPath(path, "value")
	}
	var value *documents
	err := c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		value = &documents{}
		if d.Scale == 0 {
			res, err := agg.Transaction(tx).Get(ctx)
			if err != nil {
				return err
			}
			v, _ := res["value"].(*firestorepb.Value)
			if n, ok := v.GetValueType().(*firestorepb.Value_IntegerValue); ok {
				value.total.SetInt64(n.IntegerValue)
				return nil
			}
		}
		docs := tx.Documents(q.SelectPaths(path))
		defer docs.Stop()
		var kept int64
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
			i, ok := d.summed(n)
			switch {
			case ok && err == nil:
				value.total.Add(&value.total, big.NewInt(i))
				if next := kept + i; (next > kept) == (i > 0) {
					kept = next
				} else {
					if value.over == nil {
						value.over = map[string]int64{}
					}
					_, path, _ := strings.Cut(doc.Ref.Path, "/documents/") // as events name it
					value.over[path] = i
				}
			case err == nil:
				skipped++
			}
		}
		if skipped > 0 {
			c.log.WarnContext(ctx, "summed field is not a number the declaration sums in some documents; counted as 0", "collection", collection, "sum", d.Sum, "scale", d.Scale, "documents", skipped)
		}
		return nil
	}, firestore.ReadOnly, firestore.TransactionReadTime(at))
	if err != nil {
		return nil, fmt.Errorf("aggregate %s at %s: %w", collection, at.Format(time.RFC3339Nano), err)
	}
	if !value.total.IsInt64() {
		c.log.ErrorContext(ctx, "the documents' sum leaves int64; documents past it count 0", "collection", collection, "sum", d.Sum, "documents", len(value.over))
	} else {
		value.over = nil // a sum back within int64 counts every document
	}
	return value, nil
}

// Drift is a collection counter's Value against its Documents' aggregation, both At one read time.
type Drift struct {
	Counter, Collection string
	At                  time.Time
	Value, Documents    int64
}

// kept is a collection counter's declaration, what it counts, and whether the counter exists yet.
type kept struct {
	d      *Declaration
	sc     scope
	exists bool
}

// find returns what keeps counter id: the declaration the counter records, or for a missing counter
// the one whose template makes id.
func (c *Counting) find(ctx context.Context, id string) (kept, error) {
	snap, err := c.reader.CounterRef(id).Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return kept{}, err
	}
	var recorded string
	if err == nil {
		var ok bool
		if recorded, ok = snap.Data()[shared.FieldSource].(string); !ok {
			return kept{}, fmt.Errorf("counter %q is not a collection counter: %w", id, ErrNotItsCounter)
		}
	}
	for _, d := range c.set.Declarations {
		if recorded != "" && !SameSource(recorded, d.source()) {
			continue
		}
		if sc, ok := d.matchCounter(id); ok {
			return kept{d: d, sc: sc, exists: err == nil}, nil
		}
	}
	if recorded != "" {
		return kept{}, fmt.Errorf("counter %q counts %q, which this deployment no longer declares", id, recorded)
	}
	return kept{}, fmt.Errorf("counter %q is kept by no declaration", id)
}

// baselineOf is the base of the counter k keeps.
func baselineOf(k kept) baseline { return baseline{d: k.d, sc: k.sc} }

// Verify compares counter id with its documents at read time at (within version retention), less
// what it leaves out to stay within int64: a difference is drift, or changes not yet counted.
func (c *Counting) Verify(ctx context.Context, id string, at time.Time) (Drift, error) {
	k, err := c.find(ctx, id)
	if err != nil {
		return Drift{}, err
	}
	at = at.Truncate(time.Microsecond)
	docs, err := c.valueAt(ctx, k.d, k.sc, at)
	if err != nil {
		return Drift{}, err
	}
	unapplied := new(big.Int)
	if k.d.Sum != "" {
		if unapplied, err = c.unappliedAt(ctx, id, at); err != nil {
			return Drift{}, err
		}
	}
	want := new(big.Int).Sub(&docs.total, unapplied)
	if !want.IsInt64() {
		return Drift{}, fmt.Errorf("counter %q: its documents' value less what it leaves out, %s, leaves int64: repair it", id, want)
	}
	sums, err := c.reader.SumsAt(ctx, id, at, nil)
	if err != nil {
		return Drift{}, err
	}
	return Drift{Counter: id, Collection: k.d.collection(k.sc), At: at, Value: sums.Count, Documents: want.Int64()}, nil
}

// Repair makes counter id exact again (a new base), safely while changes are in flight;
// a missing counter is created and based.
func (c *Counting) Repair(ctx context.Context, id string) error {
	k, err := c.find(ctx, id)
	if err != nil {
		return err
	}
	if !k.exists {
		return c.establishBase(ctx, id, baselineOf(k), stampIfNone)
	}
	return c.rebase(ctx, id, baselineOf(k))
}

// maxQuietChecks bounds the collection counters one CheckQuiet call checks, and quietCheckBudget
// the time it starts checks in, so that it never holds up the sweep it runs in.
const (
	maxQuietChecks   = 20
	quietCheckBudget = 10 * time.Second
)

// QuietCheck is what one CheckQuiet call found and did: the counters that differed from their
// documents (repaired), those based under a declaration that has changed since (rebased), those
// whose mirror differed from their roll-up (rewritten), and those it could not check (Unverified:
// counter ID → why), skipped.
type QuietCheck struct {
	Drifts     []Drift
	Redefined  []string
	Mirrors    []string
	Unverified map[string]string
}

// Fields of the quiet check's cursor document: the last collection counter checked.
const (
	fieldCursorSource  = "source"
	fieldCursorCounter = "counter"
)

// CheckQuiet checks, in order of declaration then ID, up to maxQuietChecks collection counters
// not written for quiet (starting them within quietCheckBudget), starting after the one cursor
// names and moving cursor past them (back to the first after the last): each is checked once per
// pass (docs/collection-counters.md). A check makes the counter exact again under
// its current declaration (Repair) and its mirror equal to its roll-up.
func (c *Counting) CheckQuiet(ctx context.Context, counters *firestore.CollectionRef, cursor *firestore.DocumentRef, now time.Time, quiet time.Duration) (QuietCheck, error) {
	check := QuietCheck{Unverified: map[string]string{}}
	if len(c.set.Declarations) == 0 {
		return check, nil
	}
	q := counters.Where(shared.FieldSource, ">", "").OrderBy(shared.FieldSource, firestore.Asc).OrderBy(firestore.DocumentID, firestore.Asc)
	last, err := cursor.Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return check, fmt.Errorf("read the quiet check's cursor: %w", err)
	}
	if source, _ := last.Data()[fieldCursorSource].(string); err == nil && source != "" {
		q = q.StartAfter(source, last.Data()[fieldCursorCounter])
	}
	const page = 200
	snaps, err := q.Limit(page).Documents(ctx).GetAll()
	if err != nil {
		return check, fmt.Errorf("find collection counters: %w", err)
	}
	busy := shared.UnixMinute(now.Add(-quiet))
	stop := time.Now().Add(quietCheckBudget)
	checked, cut := 0, false
	var at *firestore.DocumentSnapshot // the last counter passed
	for _, snap := range snaps {
		if cut = checked == maxQuietChecks || checked > 0 && time.Now().After(stop); cut {
			break // the pass goes on from here next time
		}
		at = snap
		if touched, _ := snap.Data()[shared.FieldTouchedMinute].(int64); touched > busy {
			continue // events may be in flight: checked next pass
		}
		checked++
		if err := c.checkOne(ctx, snap, now, &check); err != nil {
			check.Unverified[snap.Ref.ID] = err.Error()
		}
	}
	next := map[string]any{fieldCursorSource: "", fieldCursorCounter: ""} // the pass ended: start again
	if at != nil && (cut || len(snaps) == page) {
		next = map[string]any{fieldCursorSource: at.Data()[shared.FieldSource], fieldCursorCounter: at.Ref.ID}
	}
	if _, err := cursor.Set(ctx, next); err != nil {
		return check, fmt.Errorf("move the quiet check's cursor: %w", err)
	}
	return check, nil
}

// checkOne checks the collection counter of snap, recording what it found in check.
func (c *Counting) checkOne(ctx context.Context, snap *firestore.DocumentSnapshot, now time.Time, check *QuietCheck) error {
	id := snap.Ref.ID
	k, err := c.find(ctx, id)
	if err != nil {
		return err
	}
	if DefinitionOf(snap) != k.d.definition() {
		if err := c.Repair(ctx, id); err != nil {
			return fmt.Errorf("rebase under the changed declaration: %w", err)
		}
		check.Redefined = append(check.Redefined, id)
		if snap, err = snap.Ref.Get(ctx); err != nil { // the mirror may have changed
			return fmt.Errorf("read the rebased counter: %w", err)
		}
	} else {
		d, err := c.Verify(ctx, id, now)
		if err != nil {
			return err
		}
		if d.Value != d.Documents {
			check.Drifts = append(check.Drifts, d)
			if err := c.Repair(ctx, id); err != nil {
				return fmt.Errorf("repair drift: %w", err)
			}
		}
	}
	fixed, err := c.repairMirror(ctx, snap)
	if fixed {
		check.Mirrors = append(check.Mirrors, id)
	}
	return err
}

// repairMirror sets the mirror of snap's counter to its roll-up's count when both exist and differ,
// in a transaction that reads the roll-up, so a roll-up committed meanwhile wins; whether it wrote.
func (c *Counting) repairMirror(ctx context.Context, snap *firestore.DocumentSnapshot) (bool, error) {
	doc, _ := snap.Data()[shared.FieldMirrorDocument].(string)
	field, _ := snap.Data()[shared.FieldMirrorField].(string)
	if doc == "" || field == "" {
		return false, nil
	}
	path := firestore.FieldPath(strings.Split(field, "."))
	fixed := false
	err := c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		fixed = false
		snaps, err := tx.GetAll([]*firestore.DocumentRef{c.reader.RollupRef(snap.Ref.ID), c.client.Doc(doc)})
		if err != nil {
			return err
		}
		count, ok := snaps[0].Data()[shared.FieldCount].(int64)
		if !ok || !snaps[1].Exists() {
			return nil // no roll-up yet, or a missing mirror document, which stays missing
		}
		if have, err := snaps[1].DataAtPath(path); err == nil && have == any(count) {
			return nil
		}
		fixed = true
		return tx.Update(snaps[1].Ref, []firestore.Update{{FieldPath: path, Value: count}})
	})
	if err != nil {
		return false, fmt.Errorf("repair the mirror %s.%s: %w", doc, field, err)
	}
	return fixed, nil
}
