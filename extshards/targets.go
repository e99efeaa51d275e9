package extshards

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Target declares the main documents matching Pattern and the Fields folded into them.
type Target struct {
	Pattern string   // document path of IDs and {name} wildcards, e.g. "users/{uid}/posts/{post}"
	Fields  []string // dotted field paths, e.g. "stats.views"
}

// Targets are the setting EXTENSION_FOLDS.
type Targets []Target

// ErrNotDeclared reports a main document that no Target matches.
var ErrNotDeclared = errors.New("document matches no declared pattern (EXTENSION_FOLDS)")

// ParseTargets parses blank-separated PATTERN:FIELD[,FIELD...] entries ("posts/{post}:likes,stats.views").
// It refuses patterns naming no documents or with wildcard collections, a field that is a prefix
// of another, and two patterns matching one document.
func ParseTargets(s string) (Targets, error) {
	var ts Targets
	for entry := range strings.FieldsSeq(s) {
		pattern, fields, ok := strings.Cut(entry, ":")
		if !ok || fields == "" {
			return nil, fmt.Errorf("%q: want PATTERN:FIELD[,FIELD...]", entry)
		}
		t := Target{Pattern: pattern, Fields: strings.Split(fields, ",")}
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("%q: %w", entry, err)
		}
		for _, other := range ts {
			if patternsOverlap(segmentsOf(other.Pattern), segmentsOf(t.Pattern)) {
				return nil, fmt.Errorf("%q: matches documents that %q also matches", pattern, other.Pattern)
			}
		}
		ts = append(ts, t)
	}
	return ts, nil
}

var (
	literalSegment  = regexp.MustCompile(`^[^/{}.][^/{}]*$`)
	wildcardSegment = regexp.MustCompile(`^\{[A-Za-z_][A-Za-z0-9_]*\}$`)
	fieldSegment    = regexp.MustCompile("^[A-Za-z_][A-Za-z0-9_]*$")
)

func (t Target) check() error {
	segs := segmentsOf(t.Pattern)
	if len(segs) == 0 || len(segs)%2 != 0 {
		return errors.New("the pattern must name documents: collection/document pairs, e.g. posts/{post}")
	}
	for i, s := range segs {
		if !literalSegment.MatchString(s) && !wildcardSegment.MatchString(s) {
			return fmt.Errorf("segment %q: want an ID or a {name} wildcard", s)
		}
		if s == ShardsCollection || strings.HasPrefix(s, "__") {
			return fmt.Errorf("segment %q: a reserved ID", s)
		}
		if i%2 == 0 && wildcardSegment.MatchString(s) {
			return fmt.Errorf("segment %q: name the collection (a wildcard collection would reach every subcollection)", s)
		}
	}
	seen := map[string]bool{}
	for _, f := range t.Fields {
		if seen[f] {
			return fmt.Errorf("field %q: named twice", f)
		}
		seen[f] = true
		for part := range strings.SplitSeq(f, ".") {
			if !fieldSegment.MatchString(part) {
				return fmt.Errorf("field %q: want dotted names of letters, digits and _", f)
			}
		}
		for _, g := range t.Fields {
			if strings.HasPrefix(g, f+".") {
				return fmt.Errorf("field %q: a number cannot also be the map holding %q", f, g)
			}
		}
	}
	return nil
}

// Patterns are the targets' patterns, in order.
func (ts Targets) Patterns() []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Pattern
	}
	return out
}

// Match returns the target whose pattern matches the document path doc.
func (ts Targets) Match(doc string) (Target, bool) {
	segs := strings.Split(doc, "/")
	for _, t := range ts {
		p := segmentsOf(t.Pattern)
		if len(p) == len(segs) && !slices.ContainsFunc(segs, func(s string) bool { return s == "" }) &&
			patternsOverlap(p, segs) {
			return t, true
		}
	}
	return Target{}, false
}

func segmentsOf(pattern string) []string {
	if pattern == "" {
		return nil
	}
	return strings.Split(pattern, "/")
}

// patternsOverlap says whether some path matches both patterns a and b.
func patternsOverlap(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !wildcardSegment.MatchString(a[i]) && !wildcardSegment.MatchString(b[i]) {
			return false
		}
	}
	return true
}

// fieldTree is a target's fields as nested keys: a leaf (nil) is a counted number.
type fieldTree map[string]fieldTree

func (t Target) tree() fieldTree {
	root := fieldTree{}
	for _, f := range t.Fields {
		node := root
		parts := strings.Split(f, ".")
		for _, p := range parts[:len(parts)-1] {
			child := node[p]
			if child == nil {
				child = fieldTree{}
				node[p] = child
			}
			node = child
		}
		node[parts[len(parts)-1]] = nil
	}
	return root
}

// pick returns the numbers of data at tree's fields, and whether data holds nothing else.
func (tree fieldTree) pick(data map[string]any) (picked map[string]any, onlyCounted bool) {
	picked, onlyCounted = map[string]any{}, true
	for k, v := range data {
		sub, counted := tree[k]
		switch {
		case !counted:
			onlyCounted = false
		case sub == nil:
			switch v.(type) {
			case int64, float64:
				picked[k] = v
			default:
				onlyCounted = false
			}
		default:
			m, isMap := v.(map[string]any)
			if !isMap {
				onlyCounted = false
				continue
			}
			inner, only := sub.pick(m)
			if len(inner) > 0 {
				picked[k] = inner
			}
			onlyCounted = onlyCounted && only
		}
	}
	return picked, onlyCounted
}

// The extension's shard IDs: a client's UUID (either case), and partials: tabs and UUID characters.
var (
	clientShardID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	partialID     = regexp.MustCompile("^(\t[0-9a-fA-F]{4}|\t\t[0-9a-fA-F]{3}|\t\t\t[0-9a-fA-F]{2}|\t\t\t\t[0-9a-fA-F])$")
)

// ExtensionShardID says whether id has the form of an extension shard or partial.
func ExtensionShardID(id string) bool {
	return clientShardID.MatchString(id) || partialID.MatchString(id)
}
