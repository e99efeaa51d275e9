package functions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shardcount/counters/gate"
)

// Graceful stop: on SIGTERM, refuse new requests (503), flush group commits, answer accepted ones, exit.

// stopGrace bounds the graceful stop: within Cloud Run's 10 s, with room to exit.
const stopGrace = 8 * time.Second

// requests admits this process's requests until it stops.
var requests gate.Gate

// gated serves h through the gate: once stopping, 503 not_applied; an admitted request counts as
// answered once flushed.
func gated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !requests.Enter() {
			retryAfter := setRetryAfter(w)
			writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "this instance is stopping; nothing was done; retry after " + retryAfter + " s",
				Outcome: outcomeNotApplied})
			return
		}
		defer requests.Leave()
		h(w, r)
		_ = http.NewResponseController(w).Flush()
	}
}

// Shutdown refuses new increments and changes, writes pending group commits and returns when each
// has its outcome or ctx ends. It does not close the Firestore client.
func (s *Service) Shutdown(ctx context.Context) error {
	defer s.flushTallies(ctx)
	if err := s.documents.counting.Close(ctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := s.increments.increments.Close(ctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// stopOnSIGTERM makes SIGTERM stop this process gracefully (see stop) and exit.
func stopOnSIGTERM(s *Service) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		<-sigs
		os.Exit(stop(s, stopGrace))
	}()
}

// stop drains s and waits for accepted requests within grace; it returns the exit code.
func stop(s *Service, grace time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	start := time.Now()
	s.log.InfoContext(ctx, "SIGTERM: stopping; new requests are refused, pending increments written")
	requests.Close()
	if err := errors.Join(s.Shutdown(ctx), waitRequests(ctx)); err != nil {
		s.log.ErrorContext(ctx, "graceful stop incomplete; exiting anyway", "error", err.Error(), "elapsed", time.Since(start).String())
		return 1
	}
	s.log.InfoContext(ctx, "stopped: every accepted request answered", "elapsed", time.Since(start).String())
	return 0
}

// waitRequests returns once every request the gate admitted is answered, or when ctx ends.
func waitRequests(ctx context.Context) error {
	if err := requests.Wait(ctx); err != nil {
		return fmt.Errorf("requests still unanswered: %w", err)
	}
	return nil
}
