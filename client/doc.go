// Package client calls the counters' HTTP functions (Increment, Count, Top, ConfigureCounter) from a
// Go backend, with the retry table of docs/api.md ("Conventions") built in:
//
//   - 503, Cloud Run's 429, or a 5xx saying "not_applied": certainly not applied; sent again.
//   - An unknown outcome (504, 502, a 500 or other 5xx without "not_applied", a transport error, an
//     answer lost or cut short): sent again
//     with the same Idempotency-Key, which the functions apply at most once, up to a bound of attempts;
//     after it the call returns an error that errors.Is ErrOutcomeUnknown (an *OutcomeUnknownError
//     carries the key, to send again later).
//   - Between attempts: Retry-After, at most MaxRetryAfter, or else a full-jitter backoff.
//   - Any other answer but 2xx: an *Error carrying the status and the API's message and field; it is
//     not sent again (fix the request).
//
// Every increment carries an Idempotency-Key: the caller's, or one the client makes (a random UUID).
// So an increment whose call returned nil counted exactly once, whatever was resent. Reads and
// configurations are resent as increments are; a reset or a delete is sent once (a resent reset would
// discard increments acknowledged in between), and its unknown outcome is returned as such.
//
// Requests carry Google-signed ID tokens for the function's URL (its audience), made from Application
// Default Credentials by google.golang.org/api/idtoken, as private functions need (roles/run.invoker).
// WithClientOptions gives other credentials (a key, impersonation); WithHTTPClient and
// WithTokenSource replace them, e.g. for the local stack, which checks no IAM. A call whose context
// carries a user's Firebase ID token (ContextWithIDToken) sends it in Authorization and the IAM token
// in X-Serverless-Authorization.
package client
