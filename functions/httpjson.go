package functions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/shardcount/counters/shared"
)

// maxBodyBytes bounds a request body; larger bodies get 413 before any work is done.
const maxBodyBytes = 64 << 10

// requestError is an HTTP answer other than 400 for bad input, with the header it needs.
type requestError struct {
	status  int
	message string
	allow   string // Allow header of a 405
}

func (e *requestError) Error() string { return e.message }

// errorBody is the JSON body of every 4xx and 5xx answer.
type errorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

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

// decodeJSONBody decodes a request body holding exactly one JSON object into dst, refusing unknown
// fields, other content types and bodies over maxBodyBytes.
func decodeJSONBody(w http.ResponseWriter, r *http.Request, dst any) error {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return &requestError{
			status:  http.StatusUnsupportedMediaType,
			message: fmt.Sprintf("Content-Type %q is not supported; send application/json", r.Header.Get("Content-Type")),
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return jsonError(err)
	}
	// encoding/json would silently turn invalid UTF-8 into U+FFFD, merging distinct counter IDs.
	if !utf8.Valid(body) {
		return &shared.FieldError{Message: "the body is not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &shared.FieldError{Message: "the body must hold exactly one JSON object and nothing after it"}
	}
	return nil
}

// jsonError turns a decoding failure into an answer that names the field where it can.
func jsonError(err error) error {
	var (
		tooLarge *http.MaxBytesError
		typeErr  *json.UnmarshalTypeError
		syntax   *json.SyntaxError
	)
	switch {
	case errors.As(err, &tooLarge):
		return &requestError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("the body is larger than %d bytes", maxBodyBytes)}
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return &shared.FieldError{Field: typeErr.Field, Message: fmt.Sprintf("%s must be %s, got a JSON %s", typeErr.Field, jsonTypeName(typeErr.Type.String()), typeErr.Value)}
	case errors.As(err, &typeErr):
		return &shared.FieldError{Message: fmt.Sprintf("the body must be a JSON object, got a JSON %s", typeErr.Value)}
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return &shared.FieldError{Message: "the body is not valid JSON: " + err.Error()}
	case errors.Is(err, io.EOF):
		return &shared.FieldError{Message: "the body is empty; send a JSON object"}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return &shared.FieldError{Field: name, Message: fmt.Sprintf("unknown field %q", name)}
	}
	return &shared.FieldError{Message: "the body is not a valid request: " + err.Error()}
}

// jsonTypeName says in words what JSON a Go field type accepts.
func jsonTypeName(goType string) string {
	switch goType {
	case "int64", "int":
		return "an integer"
	case "string":
		return "a string"
	}
	return "a " + goType
}

// writeJSON answers with status and v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing else to do
}
