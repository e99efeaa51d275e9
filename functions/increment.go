package functions

import (
	"net/http"

	"github.com/shardcount/counters/shared"
)

// incrementRequest is the body of Increment. A missing or null delta means 1.
type incrementRequest struct {
	Counter string `json:"counter"`
	Delta   *int64 `json:"delta"`
}

// incrementResponse is Increment's answer.
type incrementResponse struct {
	Counter string `json:"counter"`
	Delta   int64  `json:"delta"`
	Shard   int    `json:"shard"`
}

// Increment is the HTTP entry point that adds delta to one random shard of a counter:
// POST {"counter": "<id>", "delta": <int, default 1>}.
func (s *Service) Increment(w http.ResponseWriter, r *http.Request) { s.serve(w, r, s.increment) }

func (s *Service) increment(w http.ResponseWriter, r *http.Request) (int, any, error) {
	if err := checkMethod(r, http.MethodPost); err != nil {
		return 0, nil, err
	}
	var req incrementRequest
	if err := decodeJSONBody(w, r, &req); err != nil {
		return 0, nil, err
	}
	delta := int64(1)
	if req.Delta != nil {
		delta = *req.Delta
	}
	if err := shared.ValidateCounterID(req.Counter); err != nil {
		return 0, nil, err
	}
	if err := shared.ValidateDelta(delta, s.cfg.MaxDelta); err != nil {
		return 0, nil, err
	}
	shard, err := s.counters.Increment(r.Context(), req.Counter, delta)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, incrementResponse{Counter: req.Counter, Delta: delta, Shard: shard}, nil
}
