package wire

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Fixed limits: a document ID's size, a shard count whose sum is one aggregation read, and deltas
// exact in JavaScript.
const (
	MaxCounterIDBytes = 1500
	MinNumShards      = 1
	MaxNumShards      = 1000
	MaxDeltaLimit     = 1 << 53
)

// FieldError is bad input: the request Field to blame, and a Message of what is allowed.
type FieldError struct {
	Field   string
	Message string
}

// Error implements error.
func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ValidateCounterID rejects IDs Firestore would refuse or misread as a document ID.
func ValidateCounterID(id string) error {
	bad := func(format string, args ...any) error {
		return &FieldError{Field: "counter", Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case id == "":
		return bad("counter ID is required")
	case !utf8.ValidString(id):
		return bad("counter ID must be valid UTF-8")
	case len(id) > MaxCounterIDBytes:
		return bad("counter ID is %d bytes; at most %d are allowed", len(id), MaxCounterIDBytes)
	case strings.Contains(id, "/"):
		return bad("counter ID must not contain '/'")
	case id == "." || id == "..":
		return bad("counter ID must not be '.' or '..'")
	case len(id) >= 4 && strings.HasPrefix(id, "__") && strings.HasSuffix(id, "__"):
		return bad("counter ID must not match __.*__ (reserved by Firestore)")
	}
	return nil
}

// ReservedCounterPrefix starts the IDs of the deployment's own counters (the SLO canary): only the
// functions change them.
const ReservedCounterPrefix = "_counters_"

// ValidateWritableCounterID is ValidateCounterID for a counter a caller would change or configure:
// IDs starting ReservedCounterPrefix are refused too.
func ValidateWritableCounterID(id string) error {
	if err := ValidateCounterID(id); err != nil {
		return err
	}
	if strings.HasPrefix(id, ReservedCounterPrefix) {
		return &FieldError{Field: "counter", Message: fmt.Sprintf("counter IDs starting %q are reserved for the deployment's own counters (the SLO canary); choose another ID", ReservedCounterPrefix)}
	}
	return nil
}

// ValidateDelta accepts |delta| in 1..maxMagnitude.
func ValidateDelta(delta, maxMagnitude int64) error {
	if delta == 0 {
		return &FieldError{Field: "delta", Message: "delta must not be zero"}
	}
	if delta > maxMagnitude || delta < -maxMagnitude {
		return &FieldError{Field: "delta", Message: fmt.Sprintf("delta must be between -%d and %d", maxMagnitude, maxMagnitude)}
	}
	return nil
}

// ValidateNumShards accepts MinNumShards..MaxNumShards.
func ValidateNumShards(n int64) error {
	if n < MinNumShards || n > MaxNumShards {
		return &FieldError{Field: "num_shards", Message: fmt.Sprintf("num_shards must be an integer from %d to %d", MinNumShards, MaxNumShards)}
	}
	return nil
}

// MaxMemberBytes bounds MAX_MEMBER_BYTES.
const MaxMemberBytes = 1500

// ValidateMember accepts non-empty UTF-8 of at most maxBytes.
func ValidateMember(member string, maxBytes int) error {
	switch {
	case member == "":
		return &FieldError{Field: "member", Message: "member must not be empty"}
	case !utf8.ValidString(member):
		return &FieldError{Field: "member", Message: "member must be valid UTF-8"}
	case len(member) > maxBytes:
		return &FieldError{Field: "member", Message: fmt.Sprintf("member is %d bytes; at most %d are allowed", len(member), maxBytes)}
	}
	return nil
}

// MaxGroupBytes bounds a group name.
const MaxGroupBytes = 256

// ValidateGroup accepts non-empty UTF-8 of at most MaxGroupBytes, without '/' or a leading "__".
func ValidateGroup(group string) error {
	bad := func(format string, args ...any) error {
		return &FieldError{Field: "group", Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case group == "":
		return bad("group must not be empty")
	case !utf8.ValidString(group):
		return bad("group must be valid UTF-8")
	case len(group) > MaxGroupBytes:
		return bad("group is %d bytes; at most %d are allowed", len(group), MaxGroupBytes)
	case strings.Contains(group, "/"):
		return bad("group must not contain '/'")
	case strings.HasPrefix(group, "__"):
		return bad("group must not start with __ (reserved by Firestore)")
	}
	return nil
}
