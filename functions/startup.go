package functions

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/shardcount/counters/version"
)

// StartedMessage is logged once an instance can serve, with its "version" (docs/operations.md).
const StartedMessage = "function started"

// logStarted logs StartedMessage.
func logStarted(ctx context.Context, log *slog.Logger) {
	log.InfoContext(ctx, StartedMessage, "version", version.Version, "service", os.Getenv("K_SERVICE"), "revision", os.Getenv("K_REVISION"))
}

// Backoff between two attempts to start after a transient failure.
const (
	firstStartBackoff = time.Second
	maxStartBackoff   = time.Minute
)

// configError is a start-up failure that no retry can mend: the configuration must change.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// isConfigError reports whether err is, or wraps, a *configError.
func isConfigError(err error) bool {
	var c *configError
	return errors.As(err, &c)
}

// startup builds a value on first use; a *configError is final, other failures are retried after a
// backoff.
type startup[T any] struct {
	build func() (T, error)
	now   func() time.Time

	mu      sync.Mutex
	built   bool
	value   T
	err     error
	retryAt time.Time
	backoff time.Duration
}

func newStartup[T any](build func() (T, error)) *startup[T] {
	return &startup[T]{build: build, now: time.Now}
}

// get returns the built value, building it when none is built and no backoff is running.
func (s *startup[T]) get() (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.built || isConfigError(s.err) || (s.err != nil && s.now().Before(s.retryAt)) {
		return s.value, s.err
	}
	s.value, s.err = s.build()
	if s.err == nil {
		s.built = true
		return s.value, nil
	}
	s.backoff = min(max(2*s.backoff, firstStartBackoff), maxStartBackoff)
	s.retryAt = s.now().Add(s.backoff)
	return s.value, s.err
}
