package counter

import (
	"errors"
	"fmt"
)

// Every failed increment says what became of it, so that adapters answer truthfully: errors.Is(err,
// ErrNotApplied) means nothing of it was applied (sending it again cannot double it);
// errors.Is(err, ErrOutcomeUnknown) means it may or may not have been applied (only a keyed
// increment may be sent again). The original cause stays wrapped too (shared.IsRetryable sees it).
var (
	// ErrNotApplied marks a failure after which the increment is certainly not applied.
	ErrNotApplied = errors.New("not applied")
	// ErrOutcomeUnknown marks a failure after which nobody can tell whether the increment was applied:
	// the database did not answer, and could not be asked in time.
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
