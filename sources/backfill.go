package sources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/shardcount/counters/shared/wire"
)

// afterCollection sorts after every document ID of a collection that Firestore's name order puts
// before the private-use block; a later ID only costs its collection one more read.
const afterCollection = "\uf8ff"

// Backfill creates and bases every counter of the declarations named in only (a counter template or
// documents pattern; none: all) whose documents exist, calling done after each. It walks each
// declaration's collection group in name order, a page of one document per collection, starting
// after the collection path after (resume where an earlier run stopped). A counter with a base is
// left as it is, so a second run changes nothing; a base is exact whatever writes race it
// (docs/collection-counters.md). A collection that exists only for a probe (ProbePath) makes
// none. On error it returns the collection to resume after.
func (c *Counting) Backfill(ctx context.Context, only []string, after string, done func(counter, collection string)) (string, error) {
	matched := false
	for _, d := range c.set.Declarations {
		if len(only) > 0 && !slices.Contains(only, d.Counter) && !slices.Contains(only, d.Documents) {
			continue
		}
		matched = true
		if last, err := c.backfill(ctx, d, after, done); err != nil {
			return last, err
		}
	}
	if !matched {
		return "", fmt.Errorf("no declaration has the counter template or documents pattern %q", only)
	}
	return "", nil
}

// backfill is Backfill of one declaration.
func (c *Counting) backfill(ctx context.Context, d *Declaration, after string, done func(counter, collection string)) (string, error) {
	q := c.client.CollectionGroup(d.pattern[len(d.pattern)-2]).OrderBy(firestore.DocumentID, firestore.Asc).Limit(1)
	cursor := after
	for {
		page := q
		if cursor != "" {
			page = q.StartAfter(c.client.Doc(cursor + "/" + afterCollection))
		}
		snaps, err := page.Documents(ctx).GetAll()
		if err != nil && !errors.Is(err, iterator.Done) {
			return cursor, fmt.Errorf("find the next collection of %s after %q: %w", d.Documents, cursor, err)
		}
		if len(snaps) == 0 {
			return "", nil
		}
		_, path, _ := strings.Cut(snaps[0].Ref.Path, "/documents/") // projects/P/databases/D/documents/<path>
		collection := path[:strings.LastIndex(path, "/")]
		if bound, ok := d.pattern.match(path); ok && !(d.pattern.probeParent(bound) && c.set.isProbe(d.ProbePath())) {
			if err := c.backfillCollection(ctx, d, collection, bound, done); err != nil {
				return cursor, err
			}
		}
		cursor = collection
	}
}

// backfillCollection creates and bases d's counters of collection, whose path binds bound: one, or
// with counter fields one per value its documents hold (each document read once).
func (c *Counting) backfillCollection(ctx context.Context, d *Declaration, collection string, bound map[string]string, done func(counter, collection string)) error {
	scopes := []scope{{bound: bound}}
	if paths := d.counterFields(); len(paths) > 0 {
		var err error
		if scopes, err = c.valuesIn(ctx, d, collection, bound, paths); err != nil {
			return err
		}
	}
	for _, sc := range scopes {
		id := d.counterID(sc)
		if wire.ValidateWritableCounterID(id) != nil || !d.accepts(id) {
			continue
		}
		if err := c.establishBase(ctx, id, baseline{d: d, sc: sc}, stampIfNone); err != nil {
			return fmt.Errorf("base counter %q on %s: %w", id, collection, err)
		}
		done(id, collection)
	}
	return nil
}

// valuesIn is a scope per distinct combination of counter field values the documents of
// collection hold.
func (c *Counting) valuesIn(ctx context.Context, d *Declaration, collection string, bound map[string]string, paths []firestore.FieldPath) ([]scope, error) {
	docs := c.client.Collection(collection).SelectPaths(paths...).Documents(ctx)
	defer docs.Stop()
	seen := map[string]bool{}
	var scopes []scope
	for {
		snap, err := docs.Next()
		if errors.Is(err, iterator.Done) {
			return scopes, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the documents of %s: %w", collection, err)
		}
		fields, why := d.fieldsOf(func(path []string) any {
			v, err := snap.DataAtPath(path)
			if err != nil {
				return nil
			}
			return v
		})
		sc := scope{bound: bound, fields: fields}
		if id := d.counterID(sc); why == "" && !seen[id] {
			seen[id] = true
			scopes = append(scopes, sc)
		}
	}
}

// Establish creates and bases counter id unless it has a base.
func (c *Counting) Establish(ctx context.Context, id string) error {
	k, err := c.find(ctx, id)
	if err != nil {
		return err
	}
	return c.establishBase(ctx, id, baselineOf(k), stampIfNone)
}

// Names reports whether name is one of the set's counter templates or documents patterns.
func (s *Set) Names(name string) bool {
	return slices.ContainsFunc(s.Declarations, func(d *Declaration) bool { return d.Counter == name || d.Documents == name })
}
