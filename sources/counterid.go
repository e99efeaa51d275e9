package sources

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
)

// A counter ID template with one path wildcard takes its value as it is. With several placeholders,
// or a field's ({field:PATH}), each value is encoded (ASCII letters and digits as they are, any
// other byte as %XX, an integer as %i or %n and its digits) and the template's text between
// placeholders must hold a character no encoding makes, so that two documents with different
// values never build one ID (docs/collection-counters.md).

// encodedValue is what an encoded value is made of.
const encodedValue = `[A-Za-z0-9%]+`

// fieldPrefix starts a counter template's field placeholder: {field:PATH}.
const fieldPrefix = "field:"

// scope is what one counter of a declaration counts: the documents of the collection its path's
// wildcards bind, whose counter fields ({field:PATH}) hold fields' values (string or int64), keyed
// by placeholder name ("field:postId").
type scope struct {
	bound  map[string]string
	fields map[string]any
}

// encodes reports whether d's template encodes its values: with several placeholders, or a field's.
func (d *Declaration) encodes() bool {
	names := placeholder.FindAllString(d.Counter, -1)
	return len(names) > 1 || slices.ContainsFunc(names, isFieldPlaceholder)
}

func isFieldPlaceholder(m string) bool { return strings.HasPrefix(m, "{"+fieldPrefix) }

// counterID is d's counter ID for documents of sc.
func (d *Declaration) counterID(sc scope) string {
	if !d.encodes() {
		return expand(d.Counter, sc.bound)
	}
	encoded := make(map[string]string, len(sc.bound)+len(sc.fields))
	for name, v := range sc.bound {
		encoded[name] = encodeValue(v)
	}
	for name, v := range sc.fields {
		encoded[name] = encodeField(v)
	}
	return expand(d.Counter, encoded)
}

// encodeField is a field's value in a counter ID: a string as encodeValue writes it, an integer as
// %i (%n when negative) and its decimal digits, so that no string's encoding is any integer's.
func encodeField(v any) string {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return "%n" + strconv.FormatUint(uint64(-(x+1))+1, 10)
		}
		return "%i" + strconv.FormatInt(x, 10)
	default:
		return encodeValue(x.(string))
	}
}

// decodeField is the value encodeField wrote as s; false when it wrote no such s.
func decodeField(s string) (any, bool) {
	var v any = s
	switch {
	case strings.HasPrefix(s, "%i"), strings.HasPrefix(s, "%n"):
		u, err := strconv.ParseUint(s[2:], 10, 64)
		if err != nil || s[1] == 'i' && u > math.MaxInt64 || s[1] == 'n' && (u == 0 || u > 1<<63) {
			return nil, false
		}
		v = int64(u)
		if s[1] == 'n' {
			v = -int64(u-1) - 1
		}
	default:
		var err error
		if v, err = url.PathUnescape(s); err != nil {
			return nil, false
		}
	}
	return v, encodeField(v) == s
}

// fieldsOf is the values a document holds in d's counter fields, value giving the one at a path
// (a string, an int64, or another value; nil when missing); false, with why, when one is missing or
// neither a non-empty string nor an integer.
func (d *Declaration) fieldsOf(value func(path []string) any) (map[string]any, string) {
	fields := map[string]any{}
	for _, m := range placeholder.FindAllString(d.Counter, -1) {
		if !isFieldPlaceholder(m) {
			continue
		}
		name := m[1 : len(m)-1]
		path, _ := fieldPath(strings.TrimPrefix(name, fieldPrefix))
		switch v := value(path).(type) {
		case string:
			if v == "" {
				return nil, name + " is an empty string"
			}
			fields[name] = v
		case int64:
			fields[name] = v
		case nil:
			return nil, name + " is missing"
		default:
			return nil, name + " is neither a string nor an integer"
		}
	}
	return fields, ""
}

// protoField is the value at path in doc as fieldsOf takes it.
func protoField(doc *firestorepb.Document) func(path []string) any {
	return func(path []string) any {
		switch v := lookup(doc.GetFields(), path).GetValueType().(type) {
		case nil:
			return nil
		case *firestorepb.Value_StringValue:
			return v.StringValue
		case *firestorepb.Value_IntegerValue:
			return v.IntegerValue
		default:
			return v
		}
	}
}

// counterFields are the paths of d's counter fields.
func (d *Declaration) counterFields() []firestore.FieldPath {
	var out []firestore.FieldPath
	for _, m := range placeholder.FindAllString(d.Counter, -1) {
		if field, ok := strings.CutPrefix(m[1:len(m)-1], fieldPrefix); ok {
			path, _ := fieldPath(field)
			out = append(out, path)
		}
	}
	return out
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

// templateExpr is the expression of the IDs d's template builds, and its placeholders' names in
// order.
func (d *Declaration) templateExpr() (*regexp.Regexp, []string) {
	tmpl := d.Counter
	locs := placeholder.FindAllStringIndex(tmpl, -1)
	value := `([^/]+)`
	if d.encodes() {
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

// matchCounter is the scope whose counter ID in d is id; false when d builds no such ID.
func (d *Declaration) matchCounter(id string) (scope, bool) {
	m := d.idExpr.FindStringSubmatch(id)
	if m == nil {
		return scope{}, false
	}
	sc := scope{bound: map[string]string{}, fields: map[string]any{}}
	for i, n := range d.idNames {
		v := m[i+1]
		switch {
		case strings.HasPrefix(n, fieldPrefix):
			f, ok := decodeField(v)
			if !ok {
				return scope{}, false
			}
			sc.fields[n] = f
		case d.encodes():
			var err error
			if v, err = url.PathUnescape(v); err != nil || encodeValue(v) != m[i+1] {
				return scope{}, false // not an encoding this template makes
			}
			fallthrough
		default:
			sc.bound[n] = v
		}
	}
	return sc, true
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
