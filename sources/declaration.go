package sources

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/shared"
)

// DefaultFile is the declaration file when COUNTER_SOURCES is not set, relative to the repository.
const DefaultFile = "counter-sources.json"

// Declaration is one entry of the declaration file (docs/collection-counters.md): Counter
// ("likes-{post}") keeps the Documents matching a pattern ("posts/{post}/likes/{like}").
type Declaration struct {
	Documents string   `json:"documents"`
	Counter   string   `json:"counter"`
	Where     Where    `json:"where,omitempty"`
	Sum       string   `json:"sum,omitempty"`
	Mirror    string   `json:"mirror,omitempty"`
	NumShards int      `json:"num_shards,omitempty"`
	MinShards int      `json:"min_shards,omitempty"`
	MaxShards int      `json:"max_shards,omitempty"`
	Windows   []string `json:"windows,omitempty"`
	Group     *string  `json:"group,omitempty"`
	// Scale N sums Sum's decimal values exactly, in units of 10^-N (0..9; 2: cents).
	Scale int `json:"scale,omitempty"`
	// CounterIDPattern (a regular expression of whole IDs) bounds the counters the documents make;
	// unset, the deployment's COUNTER_ID_PATTERN does (InheritCounterIDPattern).
	CounterIDPattern string `json:"counter_id_pattern,omitempty"`
	// Read says who reads the counters' roll-ups: "public" (unset: anyone) or "none" (only the
	// functions and server code; the composed rules deny clients).
	Read string `json:"read,omitempty"`
	// Canary opts in to a probe of the declaration's trigger (ProbePath, ProbeTriggers).
	Canary bool `json:"canary,omitempty"`

	pattern pattern
	mirror  mirror
	ids     *regexp.Regexp // nil: any
	// idExpr matches the IDs the template builds, binding idNames.
	idExpr  *regexp.Regexp
	idNames []string
}

// Set is the declarations of a deployment, checked.
type Set struct {
	Declarations []*Declaration
}

// Load checks the declarations COUNTER_SOURCES gives: a file's path (missing: none), or a JSON array
// (Inline).
func Load(path string, schema shared.Schema) (*Set, error) {
	if inline := strings.TrimSpace(path); strings.HasPrefix(inline, "[") {
		set, err := Parse([]byte(inline), schema)
		if err != nil {
			return nil, fmt.Errorf("counter sources: %w", err)
		}
		return set, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Set{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read counter sources: %w", err)
	}
	set, err := Parse(data, schema)
	if err != nil {
		return nil, fmt.Errorf("counter sources %s: %w", path, err)
	}
	return set, nil
}

// Parse checks a JSON array of declarations; the error names the first bad entry and its rule.
func Parse(data []byte, schema shared.Schema) (*Set, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("want a JSON array of {\"documents\", \"counter\", ...} entries: %w", err)
	}
	decls := make([]*Declaration, len(raw))
	for i, r := range raw {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.UseNumber()
		dec.DisallowUnknownFields()
		if err := dec.Decode(&decls[i]); err != nil || decls[i] == nil {
			return nil, fmt.Errorf("entry %d: want {\"documents\", \"counter\", and optionally \"where\", \"sum\", \"mirror\", num_shards, min_shards, max_shards, windows, group, scale, counter_id_pattern, read, canary}: %v", i, err)
		}
	}
	for i, d := range decls {
		if err := d.check(schema); err != nil {
			return nil, fmt.Errorf("entry %d (%q): %w", i, d.Documents, err)
		}
	}
	if err := checkCanaries(decls); err != nil {
		return nil, err
	}
	for i, d := range decls {
		for j, o := range decls {
			if i < j && canShareIDs(d, o) {
				return nil, fmt.Errorf("entry %d (%q): counter %q can build the IDs entry %d's %q builds: one counter counts one declaration; start or end the templates differently", i, d.Documents, d.Counter, j, o.Counter)
			}
			if d.Mirror != "" && o.pattern.overlaps(d.mirror.document) {
				return nil, fmt.Errorf("entry %d (%q): mirror %q is a document that entry %d counts: its writes would feed its own count", i, d.Documents, d.Mirror, j)
			}
			if i != j && d.Mirror != "" && o.Mirror != "" && d.mirror.writesInto(o.mirror.document, o.mirror.field) {
				return nil, fmt.Errorf("entry %d (%q): mirror %q writes the field of entry %d's mirror %q: each would overwrite the other's count", i, d.Documents, d.Mirror, j, o.Mirror)
			}
		}
	}
	return &Set{Declarations: decls}, nil
}

// check applies the rules of one declaration.
func (d *Declaration) check(schema shared.Schema) error {
	var err error
	if d.pattern, err = parsePattern(d.Documents, schema); err != nil {
		return fmt.Errorf("documents: %w", err)
	}
	if err := d.pattern.checkTemplate(d.Counter); err != nil {
		return fmt.Errorf("counter: %w", err)
	}
	d.idExpr, d.idNames = d.templateExpr()
	if err := d.Where.check(); err != nil {
		return err
	}
	if d.Sum != "" {
		if _, err := fieldPath(d.Sum); err != nil {
			return fmt.Errorf("sum: %w", err)
		}
	}
	if d.Scale < 0 || d.Scale > 9 || d.Scale != 0 && d.Sum == "" {
		return fmt.Errorf("scale: %d; a scale of 0 to 9 decimals goes with a sum", d.Scale)
	}
	if d.Mirror != "" {
		if d.mirror, err = parseMirror(d.Mirror, d.pattern, d.Counter, schema); err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
	}
	switch {
	case d.Read != "" && d.Read != ReadPublic && d.Read != ReadNone:
		return fmt.Errorf("read: %q; want %q (anyone reads the roll-ups) or %q (no client does)", d.Read, ReadPublic, ReadNone)
	case d.Read == ReadNone && d.Group != nil && *d.Group != "":
		return fmt.Errorf("read: %q with group %q: top lists are readable by clients; drop the group, or read %q", ReadNone, *d.Group, ReadPublic)
	}
	if d.CounterIDPattern != "" {
		if d.ids, err = regexp.Compile(`^(?:` + d.CounterIDPattern + `)$`); err != nil {
			return fmt.Errorf("counter_id_pattern: %w", err)
		}
	}
	return d.checkSettings()
}

// whereValue is a where value as Firestore compares it: string, bool, nil, int64 or finite float64.
func whereValue(v any) (any, error) {
	switch x := v.(type) {
	case string, bool, nil:
		return x, nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
		f, err := x.Float64()
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s is not a finite number", x)
		}
		return f, nil
	}
	return nil, errors.New("only a string, a number, true, false or null can be compared")
}

// fieldPath splits a dotted field path of field names.
func fieldPath(s string) ([]string, error) {
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if p == "" || strings.HasPrefix(p, "__") && strings.HasSuffix(p, "__") || strings.ContainsAny(p, "`*[]~/") {
			return nil, fmt.Errorf("%q is not a field path (dotted field names, none empty, reserved or with `*[]~/)", s)
		}
	}
	return parts, nil
}

// checkSettings applies ConfigureCounter's rules to the declared settings.
func (d *Declaration) checkSettings() error {
	for _, f := range []struct {
		name string
		n    int
	}{{"num_shards", d.NumShards}, {"min_shards", d.MinShards}, {"max_shards", d.MaxShards}} {
		if f.n != 0 {
			if err := wire.ValidateNumShards(int64(f.n)); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
	}
	if d.MinShards != 0 && d.MaxShards != 0 && d.MinShards > d.MaxShards {
		return errors.New("min_shards is above max_shards")
	}
	for _, w := range d.Windows {
		if !slices.Contains(counter.Windows, w) {
			return fmt.Errorf("windows: unknown window %q; windows are %q", w, counter.Windows)
		}
	}
	if d.Group != nil && *d.Group != "" {
		if err := wire.ValidateGroup(*d.Group); err != nil {
			return err
		}
	}
	return nil
}

// InheritCounterIDPattern bounds the counters of declarations without a counter_id_pattern by ids
// (the deployment's COUNTER_ID_PATTERN, whole IDs; nil: none).
func (s *Set) InheritCounterIDPattern(ids *regexp.Regexp) {
	for _, d := range s.Declarations {
		if d.CounterIDPattern == "" {
			d.ids = ids
		}
	}
}

// accepts reports whether d may make counter id.
func (d *Declaration) accepts(id string) bool { return d.ids == nil || d.ids.MatchString(id) }

// CheckFolds refuses a mirror into a field that an extension fold (EXTENSION_FOLDS) writes: each
// would overwrite the other's count.
func (s *Set) CheckFolds(folds extshards.Targets) error {
	for i, d := range s.Declarations {
		for _, f := range folds {
			for _, field := range f.Fields {
				if d.Mirror != "" && d.mirror.writesInto(pattern(strings.Split(f.Pattern, "/")), strings.Split(field, ".")) {
					return fmt.Errorf("counter sources: entry %d (%q): mirror %q writes a field the extension fold writes (EXTENSION_FOLDS %s:%s): mirror into another field", i, d.Documents, d.Mirror, f.Pattern, field)
				}
			}
		}
	}
	return nil
}

// source names d on the counters it creates (shared.FieldSource): its counter template, unique in a
// set, so a declaration whose other fields change keeps its counters.
func (d *Declaration) source() string { return d.Counter }

// definition fingerprints what d counts (a base records it): its documents, where, sum,
// scale and mirror.
func (d *Declaration) definition() string {
	data, err := json.Marshal([]any{d.Documents, d.Where, d.Sum, d.Scale, d.Mirror})
	if err != nil {
		panic(fmt.Sprintf("a checked declaration encodes: %v", err)) // its values are JSON's own
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

// Settings is the counter configuration the declaration asks for.
func (d *Declaration) Settings() counter.Settings {
	st := counter.Settings{NumShards: d.NumShards, MinShards: d.MinShards, MaxShards: d.MaxShards, Group: d.Group}
	if d.Windows != nil {
		st.Windows = d.Windows
	}
	return st
}

// Patterns lists the set's distinct document patterns in order: one trigger each.
func (s *Set) Patterns() []string {
	var out []string
	for _, d := range s.Declarations {
		if !slices.Contains(out, d.Documents) {
			out = append(out, d.Documents)
		}
	}
	return out
}

// Inline is the file at path as compact JSON for COUNTER_SOURCES; a missing file is "[]".
func Inline(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "[]", nil
	}
	if err != nil {
		return "", fmt.Errorf("read counter sources: %w", err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return "", fmt.Errorf("counter sources %s: %w", path, err)
	}
	return b.String(), nil
}
