package functions

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/shardcount/counters/shared/wire"

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

// windowCountResponse is Count's answer for one bucket of a window.
type windowCountResponse struct {
	Counter string   `json:"counter"`
	Window  string   `json:"window"`
	Bucket  string   `json:"bucket"`
	Count   int64    `json:"count"`
	Windows []string `json:"windows"`
}

// countAnswer is Count's answer: countResponse or windowCountResponse.
type countAnswer interface {
	answer
	countAnswer()
}

func (countResponse) status() int        { return http.StatusOK }
func (windowCountResponse) status() int  { return http.StatusOK }
func (countResponse) countAnswer()       {}
func (windowCountResponse) countAnswer() {}

// countMethods are the methods Count accepts.
var countMethods = []string{http.MethodGet, http.MethodHead}

// Count is the HTTP entry point GET ?counter=<id>[&window=W[&bucket=L]]: a counter's exact value and
// its roll-up, or one window bucket's count. See docs/api.md.
func (h *readHandler) Count(w http.ResponseWriter, r *http.Request) {
	serve(&h.answerer, w, r, h.count)
}

func (h *readHandler) count(w http.ResponseWriter, r *http.Request) (countAnswer, error) {
	if err := checkMethod(r, countMethods...); err != nil {
		return nil, err
	}
	id, err := counterParam(r, h.checkCounterID)
	if err != nil {
		return nil, err
	}
	if q := r.URL.Query(); q.Has("window") || q.Has("bucket") {
		return h.windowCount(r, id)
	}
	// Roll-up first, so it is never ahead of the value.
	doc, rollupErr := h.rollups.Get(r.Context(), id)
	if rollupErr != nil && shared.IsRetryable(rollupErr) {
		return nil, rollupErr
	}
	if h.betweenCountReads != nil {
		h.betweenCountReads(id)
	}
	value, err := h.reader.Value(r.Context(), id)
	if uncountable := (*counter.UncountableError)(nil); errors.As(err, &uncountable) {
		// Broken data: 500 naming what to fix (Count is private).
		h.log.ErrorContext(r.Context(), "counter cannot be computed", "counter", id, "error", err.Error())
		return nil, &requestError{status: http.StatusInternalServerError, message: uncountable.Error()}
	}
	if err != nil {
		return nil, declaredNotFound(h.counting, id, err)
	}
	resp := countResponse{Counter: id, Count: value.Count, NumShards: value.NumShards}
	// A broken roll-up is reported missing, and logged.
	switch {
	case rollupErr != nil:
		h.log.ErrorContext(r.Context(), "roll-up unreadable; answered without it", "counter", id, "error", rollupErr.Error())
	case doc != nil:
		resp.Rollup = &rollupSummary{Count: doc.Count, UpdatedAt: doc.UpdatedAt.UTC().Format(time.RFC3339Nano)}
	}
	return resp, nil
}

// windowCount answers Count for one bucket of a window.
func (h *readHandler) windowCount(r *http.Request, id string) (windowCountResponse, error) {
	window, err := oneParam(r, "window")
	if err != nil {
		return windowCountResponse{}, err
	}
	if !counter.ValidWindow(window) {
		return windowCountResponse{}, &wire.FieldError{Field: "window", Message: fmt.Sprintf("unknown window %q; windows are %q", window, counter.Windows)}
	}
	var bucket string
	if r.URL.Query().Has("bucket") {
		if bucket, err = oneParam(r, "bucket"); err != nil {
			return windowCountResponse{}, err
		}
		if !counter.ValidBucket(window, bucket) {
			return windowCountResponse{}, &wire.FieldError{Field: "bucket", Message: fmt.Sprintf("bucket %q is not a %s bucket label (UTC, like %s)", bucket, window, counter.Bucket(window, time.Now()))}
		}
	}
	v, err := h.reader.WindowValue(r.Context(), id, window, bucket)
	if err != nil {
		return windowCountResponse{}, declaredNotFound(h.counting, id, err)
	}
	return windowCountResponse{Counter: id, Window: window, Bucket: v.Bucket, Count: v.Count, Windows: v.Windows}, nil
}

// oneParam is the query parameter name, given exactly once.
func oneParam(r *http.Request, name string) (string, error) {
	vs := r.URL.Query()[name]
	if len(vs) != 1 {
		return "", &wire.FieldError{Field: name, Message: fmt.Sprintf("give exactly one %s query parameter, got %d", name, len(vs))}
	}
	return vs[0], nil
}
