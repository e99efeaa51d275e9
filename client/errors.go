package client

import (
	"errors"
	"fmt"
	"time"
)

// ErrOutcomeUnknown is what errors.Is finds in the error of a call that may or may not have been
// applied: every attempt it was allowed ended without a certain answer (504, a 5xx without
// "not_applied", a transport error, a lost answer), or its context ended after a request went out. Send the increment again later with the
// same key (OutcomeUnknownError.Key): it counts at most once.
var ErrOutcomeUnknown = errors.New("outcome unknown")

// OutcomeUnknownError is the error of a call whose outcome is unknown (errors.Is ErrOutcomeUnknown).
type OutcomeUnknownError struct {
	// Key is the increment's Idempotency-Key ("" for calls other than Increment).
	Key string
	// Attempts is how often the call was sent.
	Attempts int
	// Err is the last attempt's failure.
	Err error
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

// Unwrap returns the last attempt's failure.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// Error is an answer other than 2xx, as the functions send it: {"error", "field", "outcome"}.
type Error struct {
	// Status is the HTTP status: 4xx for a request to fix; 503, 429 or a 5xx with Outcome
	// "not_applied" when the attempts ran out on answers that applied nothing.
	Status int
	// Message says what was wrong and what is allowed (the answer's "error").
	Message string
	// Field names the request field to blame, if any (e.g. "delta", "counter", "Idempotency-Key").
	Field string
	// Outcome is the answer's "outcome" for a failed increment: "not_applied", "unknown" or "".
	Outcome string
	// RetryAfter is the answer's Retry-After (0 when absent).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	field := ""
	if e.Field != "" {
		field = " (field " + e.Field + ")"
	}
	return fmt.Sprintf("%d%s: %s", e.Status, field, e.Message)
}
