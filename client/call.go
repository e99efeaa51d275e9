package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const maxAnswerBytes = 1 << 20

// The API's headers and outcomes (docs/api.md); the server's are in package shared/wire, and a
// test of the root module holds the two to each other.
const (
	headerIdempotencyKey          = "Idempotency-Key"
	headerReplayed                = "Idempotent-Replayed"
	headerServerlessAuthorization = "X-Serverless-Authorization"
	outcomeNotApplied             = "not_applied"
)

// errorBody is every error answer's body.
type errorBody struct {
	Error   string `json:"error"`
	Field   string `json:"field,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// call is one request; resendUnknown allows resending it after an unknown outcome.
type call struct {
	method, endpoint string
	query            url.Values
	body             any
	key              string
	resendUnknown    bool
}

// answer is a 2xx answer.
type answer struct {
	status   int
	header   http.Header
	attempts int
}

// do sends c, up to maxAttempts times, until a 2xx (decoded into out) or a refusal: the retry table
// of docs/api.md ("Go client").
func (cl *Client) do(ctx context.Context, c call, out any) (answer, error) {
	if c.endpoint == "" {
		return answer{}, errNoURL
	}
	var body []byte
	if c.body != nil {
		var err error
		if body, err = json.Marshal(c.body); err != nil {
			return answer{}, fmt.Errorf("encode request: %w", err)
		}
	}
	unknown := false // an attempt may have applied
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil && attempt == 1 {
			return answer{}, err
		}
		status, header, raw, err := cl.send(ctx, c, body)
		var notSent *notSentError
		switch {
		case errors.As(err, &notSent): // not applied; resent
		case err != nil:
			unknown = true
		case status >= 200 && status < 300:
			if out != nil && status != http.StatusNoContent && len(raw) > 0 {
				if decodeErr := json.Unmarshal(raw, out); decodeErr != nil {
					// cut short or mangled
					unknown, err = true, fmt.Errorf("decode %d answer %.200q: %w", status, raw, decodeErr)
					break
				}
			}
			return answer{status: status, header: header, attempts: attempt}, nil
		case status >= 500 || status == http.StatusTooManyRequests:
			apiErr := apiError(status, header, raw)
			err = apiErr
			if !notApplied(apiErr) {
				unknown = true
			}
		default:
			if unknown {
				return answer{}, &OutcomeUnknownError{Key: c.key, Attempts: attempt, Err: apiError(status, header, raw)}
			}
			return answer{}, apiError(status, header, raw)
		}
		if (unknown && !c.resendUnknown) || attempt >= cl.maxAttempts {
			return answer{}, settled(c, attempt, unknown, err)
		}
		wait := backoff(attempt)
		if ra := retryAfter(header); ra > 0 {
			wait = min(ra, MaxRetryAfter)
		}
		if waitErr := sleep(ctx, wait); waitErr != nil {
			return answer{}, settled(c, attempt, unknown, fmt.Errorf("%w (last answer: %w)", waitErr, err))
		}
	}
}

// notApplied reports whether a 5xx or 429 certainly applied nothing.
func notApplied(e *Error) bool {
	return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests || e.Outcome == outcomeNotApplied
}

// sleep waits d, or returns ctx's error; tests replace it.
var sleep = func(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// settled is the error of a call out of attempts.
func settled(c call, attempts int, unknown bool, err error) error {
	if unknown {
		return &OutcomeUnknownError{Key: c.key, Attempts: attempts, Err: err}
	}
	return err
}

// send makes one attempt; err when no whole answer came back.
func (cl *Client) send(ctx context.Context, c call, body []byte) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	u := c.endpoint
	if c.query != nil {
		u += "?" + c.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, c.method, u, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set(headerIdempotencyKey, c.key)
	}
	if tok := idTokenOf(ctx); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("User-Agent", cl.userAgent)
	resp, err := cl.clients[c.endpoint].Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("read the %d answer: %w", resp.StatusCode, err)
	}
	return resp.StatusCode, resp.Header, raw, nil
}

// apiError is the *Error of a non-2xx answer.
func apiError(status int, header http.Header, raw []byte) *Error {
	var body errorBody
	if json.Unmarshal(raw, &body) != nil || body.Error == "" {
		body.Error = strings.TrimSpace(string(raw)) // Cloud Run's or a proxy's
		if body.Error == "" {
			body.Error = http.StatusText(status)
		}
	}
	return &Error{Status: status, Message: body.Error, Field: body.Field, Outcome: body.Outcome, RetryAfter: retryAfter(header)}
}

// retryAfter reads Retry-After (seconds or a date); 0 when absent or unreadable.
func retryAfter(header http.Header) time.Duration {
	v := header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// backoff is uniform in [0, min(FirstBackoff·2^(attempt-1), MaxBackoff)].
func backoff(attempt int) time.Duration {
	ceiling := min(FirstBackoff<<min(attempt-1, 10), MaxBackoff)
	return rand.N(ceiling + 1)
}
