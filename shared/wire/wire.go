// Package wire declares what the counters' HTTP API sends and receives, once, for the functions that
// serve it and the Go client that calls it: header names, the increment's request and answer, the
// error body and its outcomes. It imports only the standard library, so importing the client never
// brings in the functions' dependencies. docs/api.md is the API's reference.
package wire

import "time"

// Headers of the API.
const (
	// HeaderIdempotencyKey names an increment: it is applied at most once per key.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderReplayed ("true") marks an answer that repeats the first answer to its Idempotency-Key.
	HeaderReplayed = "Idempotent-Replayed"
	// HeaderRetryAfter, on 503 (and Cloud Run's 429), is how many seconds to wait before resending.
	HeaderRetryAfter = "Retry-After"
	// HeaderServerlessAuthorization carries the caller's IAM ID token to a private function (Cloud
	// Run checks it instead of Authorization, which then reaches the function: a user's Firebase
	// Auth ID token, for example).
	HeaderServerlessAuthorization = "X-Serverless-Authorization"
)

// Outcomes of a failed increment, in ErrorBody.Outcome.
const (
	// OutcomeNotApplied: the increment was certainly not applied; sending it again is safe.
	OutcomeNotApplied = "not_applied"
	// OutcomeUnknown: the increment may or may not have been applied; send it again only with the
	// same Idempotency-Key.
	OutcomeUnknown = "unknown"
)

// ErrorBody is the JSON body of every 4xx and 5xx answer of the functions.
type ErrorBody struct {
	// Error says what was wrong and what is allowed.
	Error string `json:"error"`
	// Field names the request field to blame, if any.
	Field string `json:"field,omitempty"`
	// Outcome, on a failed increment, is OutcomeNotApplied or OutcomeUnknown; a 5xx without
	// OutcomeNotApplied is an unknown outcome.
	Outcome string `json:"outcome,omitempty"`
}

// IncrementRequest is Increment's body. A missing or null delta means 1.
type IncrementRequest struct {
	Counter string `json:"counter"`
	Delta   *int64 `json:"delta,omitempty"`
	// Member, for a distinct counter, is who or what is counted once (with ID tokens: the user, and
	// this field must be left out or equal the user's ID).
	Member *string `json:"member,omitempty"`
}

// IncrementAnswer is Increment's 200 answer.
type IncrementAnswer struct {
	Counter string `json:"counter"`
	Delta   int64  `json:"delta"`
	// Shard is the shard written; -1 when nothing was added (see Counted).
	Shard int `json:"shard"`
	// Counted is set under PER_CALLER_LIMIT (false when the caller's total would have left the limit)
	// and for a distinct counter (false when the member was counted before): nothing was added and
	// Shard is -1.
	Counted *bool `json:"counted,omitempty"`
	// ReceivedAt is a time before the increment's write committed: a roll-up with a later updated_at
	// holds it. Every answer for one key carries the same. The functions always send it (nil: an
	// older deployment).
	ReceivedAt *time.Time `json:"received_at,omitempty"`
}
