package functions

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
)

// TestOneTableAnswersRequestsAndEvents: failureOf gives each error its answer; an answer below 500
// is what IncrementFromPubSub acknowledges as poison, so a message the database refuses as invalid
// is acknowledged rather than redelivered until it is dead-lettered.
func TestOneTableAnswersRequestsAndEvents(t *testing.T) {
	a := answerer{cfg: config.Default()}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"the database refuses the write as invalid", fmt.Errorf("commit: %w", status.Error(codes.InvalidArgument, "too big")), http.StatusBadRequest},
		{"an idempotency key reused", fmt.Errorf("increment: %w", counter.ErrKeyReused), http.StatusUnprocessableEntity},
		{"no such counter", counter.ErrNotFound, http.StatusNotFound},
		{"a collection counter", counter.ErrSourceCounter, http.StatusConflict},
		{"the database is unavailable", status.Error(codes.Unavailable, "busy"), http.StatusServiceUnavailable},
		{"anything else", errors.New("boom"), http.StatusInternalServerError},
	} {
		if got := a.failureOf(tc.err).status; got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
