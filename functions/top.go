package functions

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
)

// defaultTopLimit is how many counters Top answers without a limit.
const defaultTopLimit = 10

// topResponse is Top's answer.
type topResponse struct {
	Group     string            `json:"group"`
	Window    string            `json:"window"`
	Bucket    string            `json:"bucket"`
	Top       []rollup.TopEntry `json:"top"`
	UpdatedAt *string           `json:"updated_at"`
}

func (topResponse) status() int { return http.StatusOK }

// topMethods are the methods Top accepts.
var topMethods = []string{http.MethodGet, http.MethodHead}

// Top is the HTTP entry point GET ?group=G[&window=W[&bucket=L]][&limit=N]: the group's highest
// counters, from its top-list document. See docs/api.md.
func (h *readHandler) Top(w http.ResponseWriter, r *http.Request) { serve(&h.answerer, w, r, h.top) }

func (h *readHandler) top(w http.ResponseWriter, r *http.Request) (topResponse, error) {
	if err := checkMethod(r, topMethods...); err != nil {
		return topResponse{}, err
	}
	group, err := oneParam(r, "group")
	if err != nil {
		return topResponse{}, err
	}
	if err := wire.ValidateGroup(group); err != nil {
		return topResponse{}, err
	}
	q := r.URL.Query()
	window, bucket := shared.TopWindowAll, ""
	if q.Has("window") {
		if window, err = oneParam(r, "window"); err != nil {
			return topResponse{}, err
		}
		if !counter.ValidWindow(window) {
			return topResponse{}, &wire.FieldError{Field: "window", Message: fmt.Sprintf("unknown window %q; windows are %q (leave it out for all time)", window, counter.Windows)}
		}
	}
	if q.Has("bucket") {
		if bucket, err = oneParam(r, "bucket"); err != nil {
			return topResponse{}, err
		}
		if !counter.ValidBucket(window, bucket) {
			return topResponse{}, &wire.FieldError{Field: "bucket", Message: fmt.Sprintf("bucket %q is not a UTC bucket label of window %q (hour 2026-11-23T18, day 2026-11-23, month 2026-11; none for all time)", bucket, window)}
		}
	}
	limit := defaultTopLimit
	if q.Has("limit") {
		v, err := oneParam(r, "limit")
		if err != nil {
			return topResponse{}, err
		}
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > rollup.MaxTop {
			return topResponse{}, &wire.FieldError{Field: "limit", Message: fmt.Sprintf("limit must be an integer from 1 to %d", rollup.MaxTop)}
		}
	}
	list, err := h.rollups.Top(r.Context(), group, window, bucket)
	if err != nil {
		return topResponse{}, err
	}
	resp := topResponse{Group: group, Window: window, Bucket: list.Bucket, Top: list.Top[:min(limit, len(list.Top))]}
	if list.UpdatedAt.IsZero() && bucket == "" && window != shared.TopWindowAll {
		resp.Bucket = counter.Bucket(window, time.Now()) // no list yet
	}
	if !list.UpdatedAt.IsZero() {
		at := list.UpdatedAt.UTC().Format(time.RFC3339Nano)
		resp.UpdatedAt = &at
	}
	return resp, nil
}
