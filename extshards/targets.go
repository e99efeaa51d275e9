package extshards

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Target is one kind of main document the fold serves, as the operator declares it: the documents
// whose path matches Pattern, and the Fields their clients count. Nothing else is ever folded.
type Target struct {
	// Pattern is a document path of collection and document IDs and {name} wildcards (one segment
	// each), e.g. "posts/{post}" or "users/{uid}/posts/{post}".
	Pattern string
	// Fields are the counted fields, dotted paths of nested maps ("likes", "stats.views").
	Fields []string
}

// Targets are every kind of main document the fold serves (the setting EXTENSION_FOLDS).
type Targets []Target

// ErrNotDeclared reports a main document that no Target's pattern matches: its shards are not folded.
var ErrNotDeclared = errors.New("document matches no declared pattern (EXTENSION_FOLDS)")

// ParseTargets reads targets written as EXTENSION_FOLDS is: entries separated by blanks, each
// PATTERN:FIELD[,FIELD...], e.g. "pages/{page}:visits posts/{post}:likes,stats.views". A pattern
// must name documents (an even number of segments) and not end in a wildcard collection; a field
// may not be a prefix of another; two patterns may not match one document.
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

// patternsOverlap says whether some path matches both a and b (segments: IDs or {name} wildcards).
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

// pick returns the numbers of data at the counted fields of tree, and whether data holds nothing
// else (maps holding only counted fields aside).
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

// The extension's shard IDs: a client's UUID (lower case on the web, upper case on iOS), and the
// partials its workers wrote, tabs and the first characters of a UUID.
var (
	clientShardID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	partialID     = regexp.MustCompile("^(\t[0-9a-fA-F]{4}|\t\t[0-9a-fA-F]{3}|\t\t\t[0-9a-fA-F]{2}|\t\t\t\t[0-9a-fA-F])$")
)

// ExtensionShardID says whether id has the form of a shard or partial of the extension's.
func ExtensionShardID(id string) bool {
	return clientShardID.MatchString(id) || partialID.MatchString(id)
}
