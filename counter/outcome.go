package counter

import (
	"errors"
	"fmt"
)

// Every failed increment wraps ErrNotApplied or ErrOutcomeUnknown, and its original cause.
var (
	// ErrNotApplied marks a failure after which the increment is certainly not applied.
	ErrNotApplied = errors.New("not applied")
	// ErrOutcomeUnknown marks a failure after which nobody can tell whether the increment was applied;
	// only a keyed increment is safe to send again.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrClosed is returned (with ErrNotApplied) for increments that arrive after Close began.
	ErrClosed = errors.New("the counter store is closing")
)

// notApplied wraps cause as a failure that certainly applied nothing.
func notApplied(cause error) error {
	if errors.Is(cause, ErrNotApplied) || errors.Is(cause, ErrOutcomeUnknown) {
		return cause
	}
	return fmt.Errorf("%w: %w", ErrNotApplied, cause)
}

// outcomeUnknown wraps cause as a failure whose outcome is unknown.
func outcomeUnknown(cause error) error {
	return fmt.Errorf("%w: %w", ErrOutcomeUnknown, cause)
}
