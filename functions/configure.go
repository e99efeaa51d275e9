package functions

import (
	"context"
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// configureRequest is the body of ConfigureCounter's PUT and POST.
type configureRequest struct {
	Counter   string `json:"counter"`
	NumShards *int64 `json:"num_shards"`
	MinShards *int64 `json:"min_shards"`
	MaxShards *int64 `json:"max_shards"`
	// Windows, when present, replaces the counter's windows.
	Windows *[]string `json:"windows"`
	// Distinct, when present, sets whether the counter counts distinct members.
	Distinct *bool `json:"distinct"`
	// Group, when present, sets the counter's top-list group ("": none).
	Group *string `json:"group"`
	Reset bool    `json:"reset"`
	// PurgeMembers asks for one more bounded purge of stale member documents.
	PurgeMembers bool `json:"purge_members"`
}

// configureResponse is ConfigureCounter's answer to a configuration.
type configureResponse struct {
	Counter           string `json:"counter"`
	NumShards         int    `json:"num_shards"`
	MinShards         int    `json:"min_shards"`
	MaxShards         int    `json:"max_shards"`
	Adaptive          bool   `json:"adaptive"`
	PreviousNumShards int    `json:"previous_num_shards"`
	Created           bool   `json:"created"`
	// Windows are the counter's windows besides all time.
	Windows []string `json:"windows,omitempty"`
	// Distinct is true when the counter counts distinct members.
	Distinct bool `json:"distinct,omitempty"`
	// Group is the counter's group (absent: none).
	Group string `json:"group,omitempty"`
}

// resetResponse answers a reset.
type resetResponse struct {
	Counter   string `json:"counter"`
	Reset     bool   `json:"reset"`
	Discarded int64  `json:"discarded"`
	membersPurge
}

// membersPurge is what a bounded purge of member documents did.
type membersPurge struct {
	MembersDeleted int  `json:"members_deleted"`
	MembersLeft    bool `json:"members_left"`
}

// deleteResponse answers a delete.
type deleteResponse struct {
	Counter string `json:"counter"`
	Deleted bool   `json:"deleted"`
	membersPurge
}

// purgeResponse answers a purge of member documents.
type purgeResponse struct {
	Counter string `json:"counter"`
	membersPurge
}

// configureAnswer is ConfigureCounter's answer: configureResponse, or resetResponse, deleteResponse or
// purgeResponse (through membersPurge).
type configureAnswer interface {
	answer
	configureAnswer()
}

// status is 201 when the configuration created the counter.
func (c configureResponse) status() int {
	if c.Created {
		return http.StatusCreated
	}
	return http.StatusOK
}
func (membersPurge) status() int           { return http.StatusOK }
func (configureResponse) configureAnswer() {}
func (membersPurge) configureAnswer()      {}

// ConfigureCounter is the admin HTTP entry point: PUT/POST creates or configures a counter (shards,
// windows, distinct, group), resets it or purges members; DELETE deletes it. See docs/api.md.
func (h *configureHandler) ConfigureCounter(w http.ResponseWriter, r *http.Request) {
	serve(&h.answerer, w, r, h.configure)
}

func (h *configureHandler) configure(w http.ResponseWriter, r *http.Request) (configureAnswer, error) {
	if err := checkMethod(r, http.MethodPut, http.MethodPost, http.MethodDelete); err != nil {
		return nil, err
	}
	if r.Method == http.MethodDelete {
		// Not held to COUNTER_ID_PATTERN: older counters stay deletable.
		id, err := counterParam(r, wire.ValidateWritableCounterID)
		if err != nil {
			return nil, err
		}
		ranked, err := h.rollups.Get(r.Context(), id) // the top lists it is in
		if err != nil && shared.IsRetryable(err) {
			return nil, err
		}
		if err := h.lifecycle.Delete(r.Context(), id); err != nil {
			return nil, declaredNotFound(h.counting, id, err)
		}
		if err := h.engine.RefreshTopsAfterDelete(r.Context(), id, ranked); err != nil {
			h.log.WarnContext(r.Context(), "top lists not refreshed after a counter delete; they rank it until their group's next roll-up",
				"counter", id, "error", err.Error())
		}
		return deleteResponse{Counter: id, Deleted: true, membersPurge: h.purgeMembers(r, id)}, nil
	}
	var req configureRequest
	if err := decodeJSONBody(w, r, &req); err != nil {
		return nil, err
	}
	if err := wire.ValidateWritableCounterID(req.Counter); err != nil {
		return nil, err
	}
	if req.PurgeMembers { // not held to COUNTER_ID_PATTERN
		if req.Reset || req.NumShards != nil || req.MinShards != nil || req.MaxShards != nil || req.Windows != nil || req.Distinct != nil || req.Group != nil {
			return nil, &wire.FieldError{Field: "purge_members", Message: "a purge of members takes no other field; send them in a request of their own"}
		}
		deleted, more, err := h.members.PurgeMembers(r.Context(), req.Counter)
		if err != nil {
			return nil, declaredNotFound(h.counting, req.Counter, err)
		}
		return purgeResponse{Counter: req.Counter, membersPurge: membersPurge{MembersDeleted: deleted, MembersLeft: more}}, nil
	}
	if req.Reset { // not held to COUNTER_ID_PATTERN
		if req.NumShards != nil || req.MinShards != nil || req.MaxShards != nil || req.Windows != nil || req.Distinct != nil || req.Group != nil {
			return nil, &wire.FieldError{Field: "reset", Message: "a reset takes no num_shards, min_shards, max_shards, windows, distinct or group; send them in a request of their own"}
		}
		discarded, err := h.lifecycle.Reset(r.Context(), req.Counter)
		if err != nil {
			return nil, declaredNotFound(h.counting, req.Counter, err)
		}
		return resetResponse{Counter: req.Counter, Reset: true, Discarded: discarded, membersPurge: h.purgeMembers(r, req.Counter)}, nil
	}
	if err := h.checkWritableCounterID(req.Counter); err != nil {
		return nil, err
	}
	if err := h.refuseDeclaredCreation(r.Context(), req.Counter); err != nil {
		return nil, err
	}
	settings, err := req.settings()
	if err != nil {
		return nil, err
	}
	cfg, err := h.lifecycle.Configure(r.Context(), req.Counter, settings)
	if err != nil {
		return nil, err
	}
	return configureResponse{
		Counter: req.Counter, NumShards: cfg.NumShards, MinShards: cfg.MinShards, MaxShards: cfg.MaxShards,
		Adaptive: !cfg.Pinned(), PreviousNumShards: cfg.PreviousNumShards, Created: cfg.Created,
		Windows: cfg.Windows, Distinct: cfg.Distinct, Group: cfg.Group,
	}, nil
}

// settings validates the fields of a configuration request.
func (req configureRequest) settings() (counter.Settings, error) {
	if req.NumShards == nil && req.MinShards == nil && req.MaxShards == nil && req.Windows == nil && req.Distinct == nil && req.Group == nil {
		return counter.Settings{}, &wire.FieldError{Field: "num_shards", Message: "num_shards is required (or min_shards/max_shards for an adaptive count, windows, distinct, group, or reset)"}
	}
	st := counter.Settings{Distinct: req.Distinct, Group: req.Group}
	if req.Windows != nil {
		for _, w := range *req.Windows {
			if !counter.ValidWindow(w) {
				return counter.Settings{}, &wire.FieldError{Field: "windows", Message: fmt.Sprintf("unknown window %q; windows are %q", w, counter.Windows)}
			}
		}
		st.Windows = append([]string{}, *req.Windows...)
	}
	for _, f := range []struct {
		name string
		v    *int64
		dst  *int
	}{{"num_shards", req.NumShards, &st.NumShards}, {"min_shards", req.MinShards, &st.MinShards}, {"max_shards", req.MaxShards, &st.MaxShards}} {
		if f.v == nil {
			continue
		}
		if wire.ValidateNumShards(*f.v) != nil {
			return counter.Settings{}, &wire.FieldError{Field: f.name,
				Message: fmt.Sprintf("%s must be an integer from %d to %d", f.name, wire.MinNumShards, wire.MaxNumShards)}
		}
		*f.dst = int(*f.v)
	}
	return st, nil
}

// purgeMembers runs one bounded purge of id's member documents; a failure is logged and answered
// as members left.
func (h *configureHandler) purgeMembers(r *http.Request, id string) membersPurge {
	deleted, more, err := h.members.PurgeMembers(r.Context(), id)
	if err != nil {
		h.log.WarnContext(r.Context(), "purge of member documents failed; purge_members deletes them later",
			"counter", id, "error", err.Error())
		return membersPurge{MembersDeleted: deleted, MembersLeft: true}
	}
	return membersPurge{MembersDeleted: deleted, MembersLeft: more}
}

// refuseDeclaredCreation refuses to create counter id when a declaration of COUNTER_SOURCES builds
// that ID: its documents alone make it (counter.ErrDeclared).
func (h *configureHandler) refuseDeclaredCreation(ctx context.Context, id string) error {
	if !h.counting.Declares(id) {
		return nil
	}
	_, err := h.reader.CounterRef(id).Get(ctx)
	switch {
	case status.Code(err) == codes.NotFound:
		return fmt.Errorf("create counter %q: %w", id, counter.ErrDeclared)
	case err != nil:
		return fmt.Errorf("read counter %q: %w", id, err)
	}
	return nil
}
