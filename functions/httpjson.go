package functions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/shardcount/counters/shared/wire"
)

// maxBodyBytes bounds a request body; larger ones get 413.
const maxBodyBytes = 64 << 10

// requestError is an HTTP answer other than 400 for bad input, with the header it needs.
type requestError struct {
	status  int
	message string
	field   string // the field to blame, if any
	allow   string // Allow header of a 405
	outcome string // the increment's outcome, if known
	reason  string // why an increment was refused (failureOf)
	cause   error  // logged, never sent
}

func (e *requestError) Error() string { return e.message }

// errorBody is the JSON body of every 4xx and 5xx answer.
type errorBody = wire.ErrorBody

// checkMethod accepts the request's method if it is one of allowed, or returns a 405 answer.
func checkMethod(r *http.Request, allowed ...string) error {
	for _, m := range allowed {
		if r.Method == m {
			return nil
		}
	}
	list := strings.Join(allowed, ", ")
	return &requestError{
		status:  http.StatusMethodNotAllowed,
		message: fmt.Sprintf("method %s is not allowed; use %s", r.Method, list),
		allow:   list,
	}
}

// decodeJSONBody decodes exactly one JSON object into dst, refusing unknown fields, other content
// types and bodies over maxBodyBytes.
func decodeJSONBody(w http.ResponseWriter, r *http.Request, dst any) error {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return &requestError{
			status:  http.StatusUnsupportedMediaType,
			message: fmt.Sprintf("Content-Type %q is not supported; send application/json", r.Header.Get("Content-Type")),
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &requestError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("the body is larger than %d bytes", maxBodyBytes)}
	case err != nil:
		return &wire.FieldError{Message: "the body could not be read: " + err.Error()}
	}
	return wire.DecodeJSONObject(body, dst, "the body")
}

// writeJSON answers with status and v as JSON, with Content-Length.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone
}
