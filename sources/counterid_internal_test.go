package sources

import (
	"math"
	"testing"
)

// TestFieldValuesBuildDistinctIDsAndReadBack: every string and integer a counter field holds reads
// back from its encoding, and no two values (the string "7" and the integer 7 among them) share one.
func TestFieldValuesBuildDistinctIDsAndReadBack(t *testing.T) {
	seen := map[string]any{}
	for _, v := range []any{"7", int64(7), "%i7", "-5", int64(-5), "p1", "a/b c", "é", int64(0), int64(math.MaxInt64), int64(math.MinInt64), "%n5", "i7"} {
		enc := encodeField(v)
		if other, ok := seen[enc]; ok {
			t.Errorf("%#v and %#v both encode as %q", v, other, enc)
		}
		seen[enc] = v
		if got, ok := decodeField(enc); !ok || got != v {
			t.Errorf("%q decodes as %#v %v, want %#v", enc, got, ok, v)
		}
	}
	for _, bad := range []string{"%i07", "%n0", "%i", "%i9223372036854775808", "%n9223372036854775809", "%2f", "a%2"} {
		if v, ok := decodeField(bad); ok {
			t.Errorf("%q decodes as %#v; no value encodes as it", bad, v)
		}
	}
}
