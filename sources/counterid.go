package sources

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// A counter ID template with one wildcard takes its value as it is. With several, each value is
// encoded (ASCII letters and digits as they are, any other byte as %XX) and the template's text
// between wildcards must hold a character no encoding makes, so that two documents with different
// values never build one ID (docs/collection-counters.md).

// encodedValue is what an encoded value is made of.
const encodedValue = `[A-Za-z0-9%]+`

// counterID is d's counter ID for a document whose wildcards are bound.
func (d *Declaration) counterID(bound map[string]string) string {
	if len(placeholder.FindAllStringIndex(d.Counter, -1)) < 2 {
		return expand(d.Counter, bound)
	}
	encoded := make(map[string]string, len(bound))
	for name, v := range bound {
		encoded[name] = encodeValue(v)
	}
	return expand(d.Counter, encoded)
}

// encodeValue keeps v's ASCII letters and digits and writes any other byte as %XX.
func encodeValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// templateExpr is the expression of the IDs template tmpl builds, and its wildcards' names in order.
func templateExpr(tmpl string) (*regexp.Regexp, []string) {
	locs := placeholder.FindAllStringIndex(tmpl, -1)
	value := `([^/]+)`
	if len(locs) > 1 {
		value = `(` + encodedValue + `)`
	}
	expr, at := "^", 0
	var names []string
	for _, loc := range locs {
		expr += regexp.QuoteMeta(tmpl[at:loc[0]]) + value
		names = append(names, tmpl[loc[0]+1:loc[1]-1])
		at = loc[1]
	}
	return regexp.MustCompile(expr + regexp.QuoteMeta(tmpl[at:]) + "$"), names
}

// Declares reports whether some declaration's template builds counter ID id: only its documents
// may make that counter.
func (s *Set) Declares(id string) bool {
	return slices.ContainsFunc(s.Declarations, func(d *Declaration) bool {
		_, ok := d.matchCounter(id)
		return ok
	})
}

// matchCounter binds d's template's wildcards to make id.
func (d *Declaration) matchCounter(id string) (map[string]string, bool) {
	m := d.idExpr.FindStringSubmatch(id)
	if m == nil {
		return nil, false
	}
	bound := map[string]string{}
	for i, n := range d.idNames {
		v := m[i+1]
		if len(d.idNames) > 1 {
			var err error
			if v, err = url.PathUnescape(v); err != nil || encodeValue(v) != m[i+1] {
				return nil, false // not an encoding this template makes
			}
		}
		bound[n] = v
	}
	return bound, true
}

// encodedOnly matches text an encoded value could hold all of.
var encodedOnly = regexp.MustCompile(`^[A-Za-z0-9%]*$`)

// checkSeparators refuses a template with several wildcards whose text between two of them holds
// only letters, digits and %: an encoded value could run on into it.
func checkSeparators(tmpl string) error {
	locs := placeholder.FindAllStringIndex(tmpl, -1)
	for i := 1; i < len(locs); i++ {
		if between := tmpl[locs[i-1][1]:locs[i][0]]; encodedOnly.MatchString(between) {
			return fmt.Errorf("%q: between %s and %s put a character other than letters, digits and %% (e.g. \"-\"), so that two documents never build one ID",
				tmpl, tmpl[locs[i-1][0]:locs[i-1][1]], tmpl[locs[i][0]:locs[i][1]])
		}
	}
	return nil
}

// canShareIDs reports whether templates a and b can build one counter ID. Wildcards take nearly any
// text, so two templates with wildcards can unless their fixed starts or ends differ.
func canShareIDs(a, b *Declaration) bool {
	la, lb := placeholder.FindAllStringIndex(a.Counter, -1), placeholder.FindAllStringIndex(b.Counter, -1)
	switch {
	case len(la) == 0 && len(lb) == 0:
		return a.Counter == b.Counter
	case len(la) == 0:
		_, ok := b.matchCounter(a.Counter)
		return ok
	case len(lb) == 0:
		_, ok := a.matchCounter(b.Counter)
		return ok
	}
	startA, startB := a.Counter[:la[0][0]], b.Counter[:lb[0][0]]
	endA, endB := a.Counter[la[len(la)-1][1]:], b.Counter[lb[len(lb)-1][1]:]
	return (strings.HasPrefix(startA, startB) || strings.HasPrefix(startB, startA)) &&
		(strings.HasSuffix(endA, endB) || strings.HasSuffix(endB, endA))
}
