package sources

import (
	"fmt"
	"strings"
)

// Who reads a declaration's roll-ups (Declaration.Read).
const (
	ReadPublic = "public"
	ReadNone   = "none"
)

// UnreadableIDs are RE2 expressions, each of whole counter IDs, of the counters whose declarations
// say "read": "none": the composed security rules deny clients their roll-ups. Literal text other
// than ASCII letters, digits, '_' and '-' is written \x{…}, so the expressions need no quoting but
// of their backslashes.
func (s *Set) UnreadableIDs() []string {
	var out []string
	for _, d := range s.Declarations {
		if d.Read == ReadNone {
			out = append(out, d.idRE2())
		}
	}
	return out
}

// idRE2 is an RE2 expression of the whole IDs d's template builds.
func (d *Declaration) idRE2() string {
	value := `[^/]+`
	locs := placeholder.FindAllStringIndex(d.Counter, -1)
	if d.encodes() {
		value = encodedValue
	}
	var b strings.Builder
	at := 0
	for _, loc := range append(locs, []int{len(d.Counter), len(d.Counter)}) {
		for _, r := range d.Counter[at:loc[0]] {
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\x{%x}`, r)
			}
		}
		if loc[0] < len(d.Counter) {
			b.WriteString(value)
		}
		at = loc[1]
	}
	return b.String()
}
