package counter

import (
	"errors"
	"fmt"
)

// Every failed increment wraps ErrNotApplied or ErrOutcomeUnknown, and its original cause.
var (
	// ErrNotApplied marks an increment that certainly was not applied.
	ErrNotApplied = errors.New("not applied")
	// ErrOutcomeUnknown marks one that may have applied; only a keyed one is safe to resend.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrClosed (with ErrNotApplied) refuses increments after Close began.
	ErrClosed = errors.New("the counter store is closing")
)

// notApplied wraps cause with ErrNotApplied unless it is already classified.
func notApplied(cause error) error {
	if errors.Is(cause, ErrNotApplied) || errors.Is(cause, ErrOutcomeUnknown) {
		return cause
	}
	return fmt.Errorf("%w: %w", ErrNotApplied, cause)
}

// outcomeUnknown wraps cause with ErrOutcomeUnknown.
func outcomeUnknown(cause error) error {
	return fmt.Errorf("%w: %w", ErrOutcomeUnknown, cause)
}
