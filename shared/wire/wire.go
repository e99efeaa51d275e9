// Package wire holds what callers send: the HTTP API's headers and bodies (docs/api.md), the Pub/Sub
// increment message, and their fields' rules. Not a supported import: see package counters.
package wire

import "time"

// Headers of the API.
const (
	HeaderIdempotencyKey          = "Idempotency-Key"
	HeaderReplayed                = "Idempotent-Replayed"
	HeaderRetryAfter              = "Retry-After"
	HeaderServerlessAuthorization = "X-Serverless-Authorization"
)

// Outcomes of a failed increment (ErrorBody.Outcome).
const (
	OutcomeNotApplied = "not_applied"
	OutcomeUnknown    = "unknown"
)

// ErrorBody is every error answer's body.
type ErrorBody struct {
	Error   string `json:"error"`
	Field   string `json:"field,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// IncrementRequest is Increment's body.
type IncrementRequest struct {
	Counter string  `json:"counter"`
	Delta   *int64  `json:"delta,omitempty"`
	Member  *string `json:"member,omitempty"`
}

// IncrementAnswer is Increment's 200 answer.
type IncrementAnswer struct {
	Counter    string     `json:"counter"`
	Delta      int64      `json:"delta"`
	Shard      int        `json:"shard"`
	Counted    *bool      `json:"counted,omitempty"`
	ReceivedAt *time.Time `json:"received_at,omitempty"`
}
