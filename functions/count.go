package functions

import (
	"errors"
	"net/http"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// countResponse is Count's answer.
type countResponse struct {
	Counter   string         `json:"counter"`
	Count     int64          `json:"count"`
	NumShards int            `json:"num_shards"`
	Rollup    *rollupSummary `json:"rollup"`
}

// rollupSummary is the roll-up document as Count reports it; null until the first roll-up.
type rollupSummary struct {
	Count     int64  `json:"count"`
	UpdatedAt string `json:"updated_at"`
}

// Count is the HTTP entry point that reports a counter's exact value (one aggregation query) next to
// its roll-up: GET ?counter=<id>.
func (s *Service) Count(w http.ResponseWriter, r *http.Request) { s.serve(w, r, s.count) }

func (s *Service) count(w http.ResponseWriter, r *http.Request) (int, any, error) {
	if err := checkMethod(r, http.MethodGet, http.MethodHead); err != nil {
		return 0, nil, err
	}
	id, err := counterParam(r, s.checkCounterID)
	if err != nil {
		return 0, nil, err
	}
	value, err := s.counters.Value(r.Context(), id)
	if uncountable := (*counter.UncountableError)(nil); errors.As(err, &uncountable) {
		// The stored data is broken, not the request: 500, naming what an operator must fix (Count is
		// private; a public Increment answers "internal error").
		s.log.ErrorContext(r.Context(), "counter cannot be computed", "counter", id, "error", err.Error())
		return 0, nil, &requestError{status: http.StatusInternalServerError, message: uncountable.Error()}
	}
	if err != nil {
		return 0, nil, err
	}
	resp := countResponse{Counter: id, Count: value.Count, NumShards: value.NumShards}
	// A broken roll-up must not take the exact value down with it: report it as missing, and log why.
	doc, err := s.rollups.Get(r.Context(), id)
	switch {
	case err != nil && shared.IsRetryable(err):
		return 0, nil, err
	case err != nil:
		s.log.ErrorContext(r.Context(), "roll-up unreadable; answered without it", "counter", id, "error", err.Error())
	case doc != nil:
		resp.Rollup = &rollupSummary{Count: doc.Count, UpdatedAt: doc.UpdatedAt.UTC().Format(time.RFC3339Nano)}
	}
	return http.StatusOK, resp, nil
}
