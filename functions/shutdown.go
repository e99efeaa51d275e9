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

// Graceful stop: on SIGTERM (Cloud Run kills 10 s later) the process refuses new requests with 503,
// writes pending group commits at once, waits for every accepted request to be answered, and exits.
// The handler is installed by the first request, since init only registers.

// stopGrace bounds the graceful stop: within Cloud Run's 10 s, with room to exit.
const stopGrace = 8 * time.Second

// requests admits the requests of this process until it stops: the registered entry points pass through it.
var requests gate.Gate

// gated serves h through the gate: a request that arrives once the process is stopping gets 503 with
// Retry-After and outcome not_applied (nothing was done, so retrying elsewhere is safe); an admitted one counts as answered
// once its answer is flushed to the connection, since the process may exit right after.
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

// Shutdown drains the Service for a graceful stop: new increments are refused (503, not applied) and
// the increments waiting in group commits are written now; it returns when each has its outcome, or
// when ctx ends, and then logs the summaries of the increments applied and refused since the last
// ones (logtally). It does not close the Firestore client, which its caller owns.
func (s *Service) Shutdown(ctx context.Context) error {
	defer s.flushTallies(ctx) // the increments applied and refused since the last summary lines
	if err := s.counters.Close(ctx); err != nil {
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

// stop refuses new requests, drains s and waits for the accepted requests' answers, within grace;
// it returns the process's exit code: 0 when every accepted request was answered.
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
