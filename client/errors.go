package client

import (
	"errors"
	"fmt"
	"time"
)

// ErrOutcomeUnknown: the call may or may not have applied; resend an increment later with its
// OutcomeUnknownError.Key.
var ErrOutcomeUnknown = errors.New("outcome unknown")

// OutcomeUnknownError is the error of a call whose outcome is unknown; Err is the last failure.
type OutcomeUnknownError struct {
	Key      string
	Attempts int
	Err      error
}

func (e *OutcomeUnknownError) Error() string {
	key := ""
	if e.Key != "" {
		key = fmt.Sprintf("; send it again with Idempotency-Key %q", e.Key)
	}
	return fmt.Sprintf("outcome unknown after %d attempts (%v): it may or may not have been applied%s", e.Attempts, e.Err, key)
}

// Is reports whether target is ErrOutcomeUnknown.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// Unwrap returns Err.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// Error is a non-2xx answer: {"error" (Message), "field", "outcome"}. A 4xx is a request to fix; a
// 5xx or 429 applied nothing.
type Error struct {
	Status     int
	Message    string
	Field      string
	Outcome    string
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	field := ""
	if e.Field != "" {
		field = " (field " + e.Field + ")"
	}
	return fmt.Sprintf("%d%s: %s", e.Status, field, e.Message)
}
