package functions

import (
	"net/http"

	"github.com/shardcount/counters/shared"
)

// configureRequest is the body of ConfigureCounter.
type configureRequest struct {
	Counter   string `json:"counter"`
	NumShards *int64 `json:"num_shards"`
}

// configureResponse is ConfigureCounter's answer.
type configureResponse struct {
	Counter           string `json:"counter"`
	NumShards         int    `json:"num_shards"`
	PreviousNumShards int    `json:"previous_num_shards"`
	Created           bool   `json:"created"`
}

// ConfigureCounter is the HTTP entry point that creates a counter with N zeroed shards (201) or
// changes the shard count of an existing one without changing its value (200):
// PUT or POST {"counter": "<id>", "num_shards": <1..1000>}.
func (s *Service) ConfigureCounter(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, s.configure)
}

func (s *Service) configure(w http.ResponseWriter, r *http.Request) (int, any, error) {
	if err := checkMethod(r, http.MethodPut, http.MethodPost); err != nil {
		return 0, nil, err
	}
	var req configureRequest
	if err := decodeJSONBody(w, r, &req); err != nil {
		return 0, nil, err
	}
	if err := shared.ValidateCounterID(req.Counter); err != nil {
		return 0, nil, err
	}
	if req.NumShards == nil {
		return 0, nil, &shared.FieldError{Field: "num_shards", Message: "num_shards is required"}
	}
	if err := shared.ValidateNumShards(*req.NumShards); err != nil {
		return 0, nil, err
	}
	cfg, err := s.counters.Configure(r.Context(), req.Counter, int(*req.NumShards))
	if err != nil {
		return 0, nil, err
	}
	status := http.StatusOK
	if cfg.Created {
		status = http.StatusCreated
	}
	return status, configureResponse{Counter: req.Counter, NumShards: cfg.NumShards, PreviousNumShards: cfg.PreviousNumShards, Created: cfg.Created}, nil
}
