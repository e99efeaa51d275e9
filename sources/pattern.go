package sources

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/shared"
)

// pattern is a document path pattern split at "/": collection IDs at even positions.
type pattern []string

// wildcard returns the name of a {wildcard} segment.
func wildcard(s string) (string, bool) {
	if len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' {
		return s[1 : len(s)-1], true
	}
	return "", false
}

// placeholder is a {name} in a counter ID template.
var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

var wildcardName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parsePattern checks a documents pattern: one collection per counter, none of ours.
func parsePattern(s string, schema shared.Schema) (pattern, error) {
	p := pattern(strings.Split(s, "/"))
	if s == "" || len(p)%2 != 0 {
		return nil, fmt.Errorf("%q is not a document path pattern (collection/{doc}/.../collection/{doc})", s)
	}
	if _, ok := wildcard(p[len(p)-1]); !ok {
		return nil, fmt.Errorf("%q must end in a {wildcard}: a counter counts the documents of a collection", s)
	}
	seen := map[string]bool{}
	for i, seg := range p {
		name, isWildcard := wildcard(seg)
		switch {
		case seg == "":
			return nil, fmt.Errorf("%q has an empty segment", s)
		case strings.HasSuffix(name, "=**"):
			return nil, fmt.Errorf("%q: multi-segment wildcards ({x=**}) are not allowed: one counter counts one collection", s)
		case isWildcard && i%2 == 0:
			return nil, fmt.Errorf("%q: collection IDs must be literal (%s is a wildcard)", s, seg)
		case isWildcard && (!wildcardName.MatchString(name) || seen[name]):
			return nil, fmt.Errorf("%q: wildcard %s is not a name, or is used twice", s, seg)
		case !isWildcard && strings.ContainsAny(seg, "{}"):
			return nil, fmt.Errorf("%q: segment %q is neither a literal nor a {wildcard}", s, seg)
		case i%2 == 0 && ours(seg, schema):
			return nil, fmt.Errorf("%q: collection %q is one of the counters' own: counting it would count our own writes", s, seg)
		}
		seen[name] = isWildcard
	}
	return p, nil
}

// ours reports whether the counters write collection ID id.
func ours(id string, schema shared.Schema) bool {
	return slices.Contains([]string{schema.Counters, schema.Rollups, schema.Tops, schema.Dedupe, schema.Sweep(), shared.ShardsCollection}, id) ||
		shared.OursByName(id)
}

// match binds p's wildcards to path's segments; false when it does not match, or a wildcard's
// segment is no document ID (empty, or not UTF-8).
func (p pattern) match(path string) (map[string]string, bool) {
	segs := strings.Split(path, "/")
	if len(segs) != len(p) {
		return nil, false
	}
	bound := map[string]string{}
	for i, seg := range p {
		if name, ok := wildcard(seg); ok {
			if segs[i] == "" || !utf8.ValidString(segs[i]) {
				return nil, false // not a document ID
			}
			bound[name] = segs[i]
		} else if seg != segs[i] {
			return nil, false
		}
	}
	return bound, true
}

// overlaps reports whether some document path matches both p and o.
func (p pattern) overlaps(o pattern) bool {
	if len(p) != len(o) {
		return false
	}
	for i := range p {
		_, w1 := wildcard(p[i])
		_, w2 := wildcard(o[i])
		if !w1 && !w2 && p[i] != o[i] {
			return false
		}
	}
	return true
}

// checkTemplate checks that tmpl uses every wildcard of the collection path, and no other.
func (p pattern) checkTemplate(tmpl string) error {
	if tmpl == "" {
		return errors.New("a counter ID template is required, e.g. \"likes-{post}\"")
	}
	used := map[string]bool{}
	for _, m := range placeholder.FindAllString(tmpl, -1) {
		name := m[1 : len(m)-1]
		if field, ok := strings.CutPrefix(name, fieldPrefix); ok {
			if _, err := fieldPath(field); err != nil {
				return fmt.Errorf("%q: %s: %w", tmpl, m, err)
			}
			continue
		}
		used[name] = true
	}
	for name := range used {
		if !slices.Contains(p, "{"+name+"}") {
			return fmt.Errorf("%q uses {%s}, which the documents pattern does not have", tmpl, name)
		}
	}
	for _, seg := range p[:len(p)-1] {
		if name, ok := wildcard(seg); ok && !used[name] {
			return fmt.Errorf("%q must use {%s}: a counter counts the documents of one collection", tmpl, name)
		}
	}
	if err := wire.ValidateWritableCounterID(expand(tmpl, map[string]string{})); err != nil {
		return err
	}
	if err := checkSeparators(tmpl); err != nil {
		return err
	}
	return nil
}

// expand fills tmpl's {name}s from bound ("x" when unbound).
func expand(tmpl string, bound map[string]string) string {
	return placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		if v, ok := bound[m[1:len(m)-1]]; ok {
			return v
		}
		return "x"
	})
}

// mirror is an app document field that gets a counter's count.
type mirror struct {
	document pattern
	field    []string
}

// writesInto reports whether m may write field (split at dots) of a document matching document:
// the documents overlap and one field path is, or holds, the other.
func (m mirror) writesInto(document pattern, field []string) bool {
	n := min(len(m.field), len(field))
	return m.document.overlaps(document) && slices.Equal(m.field[:n], field[:n])
}

// parseMirror checks "document.field", whose document uses only counted's collection wildcards and
// the counter fields ({field:PATH}) of template.
func parseMirror(s string, counted pattern, template string, schema shared.Schema) (mirror, error) {
	slash := strings.LastIndex(s, "/")
	dot := strings.Index(s[slash+1:], ".")
	if slash < 0 || dot < 0 {
		return mirror{}, fmt.Errorf("%q is not document.field, e.g. \"posts/{post}.likes\"", s)
	}
	doc, field := s[:slash+1+dot], s[slash+2+dot:]
	m := mirror{document: pattern(strings.Split(doc, "/"))}
	if len(m.document)%2 != 0 {
		return mirror{}, fmt.Errorf("%q does not name a document", doc)
	}
	for i, seg := range m.document {
		name, ok := wildcard(seg)
		switch {
		case ok && !slices.Contains(counted[:len(counted)-1], seg) && !(strings.HasPrefix(name, fieldPrefix) && strings.Contains(template, seg)):
			return mirror{}, fmt.Errorf("%q uses {%s}, which neither the counter's collection path nor its template has", doc, name)
		case i%2 == 0 && (ok || ours(seg, schema)):
			return mirror{}, fmt.Errorf("%q: collection %q must be a literal of the app's", doc, seg)
		}
	}
	var err error
	if m.field, err = fieldPath(field); err != nil {
		return mirror{}, err
	}
	return m, nil
}
