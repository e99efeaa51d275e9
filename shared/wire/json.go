package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// DecodeJSONObject decodes data, exactly one JSON value, into dst, refusing unknown fields and
// invalid UTF-8; errors are *FieldError. what names the input in messages ("the body").
func DecodeJSONObject(data []byte, dst any, what string) error {
	// encoding/json would make invalid UTF-8 U+FFFD, merging distinct IDs.
	if !utf8.Valid(data) {
		return &FieldError{Message: what + " is not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err, what)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &FieldError{Message: what + " must hold exactly one JSON object and nothing after it"}
	}
	return nil
}

// jsonError is err as a *FieldError, naming the field where it can.
func jsonError(err error, what string) error {
	var (
		typeErr *json.UnmarshalTypeError
		syntax  *json.SyntaxError
	)
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return &FieldError{Field: typeErr.Field, Message: fmt.Sprintf("%s must be %s, got a JSON %s", typeErr.Field, jsonTypeName(typeErr.Type.String()), typeErr.Value)}
	case errors.As(err, &typeErr):
		return &FieldError{Message: fmt.Sprintf("%s must be a JSON object, got a JSON %s", what, typeErr.Value)}
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return &FieldError{Message: what + " is not valid JSON: " + err.Error()}
	case errors.Is(err, io.EOF):
		return &FieldError{Message: what + " is empty; send a JSON object"}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return &FieldError{Field: name, Message: fmt.Sprintf("unknown field %q", name)}
	}
	return &FieldError{Message: what + " is not valid: " + err.Error()}
}

// jsonTypeName says what JSON a Go type accepts.
func jsonTypeName(goType string) string {
	switch goType {
	case "int64", "int", "*int64":
		return "an integer"
	case "string":
		return "a string"
	}
	if strings.HasPrefix(goType, "[]") {
		return "an array"
	}
	return "a " + goType
}
