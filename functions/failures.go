package functions

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/shared/wire"
)

// failure is what a request's error means: the answer docs/api.md lists and, for a caller's
// mistake, the reason EventIncrementsRefused counts it under.
type failure struct {
	status     int
	body       errorBody
	allow      string // the Allow header of a 405
	retryAfter bool   // a 503: Retry-After, also named in the message
	reason     string // "" when the failure is not the caller's
	// log, when set, is logged with the error (never sent).
	log      string
	logLevel slog.Level
	logEvent string
}

// failureOf is the one table from errors to answers, for every entry point: an event whose error
// answers below 500 can never succeed and is acknowledged (IncrementFromPubSub), others redelivered.
func (a *answerer) failureOf(err error) failure {
	var (
		reqErr   *requestError
		fieldErr *wire.FieldError
	)
	invalid := func(field, message string) failure {
		return failure{status: http.StatusBadRequest, body: errorBody{Field: field, Error: message}, reason: "invalid_request"}
	}
	switch {
	case errors.As(err, &reqErr):
		f := failure{status: reqErr.status, allow: reqErr.allow, reason: reqErr.reason,
			body: errorBody{Error: reqErr.message, Field: reqErr.field, Outcome: reqErr.outcome}}
		switch {
		case f.reason != "" || reqErr.status >= 500:
		case reqErr.status == http.StatusUnprocessableEntity:
			f.reason = "key_reused"
		case reqErr.status >= 400:
			f.reason = fmt.Sprintf("http_%d", reqErr.status)
		}
		return f
	case errors.As(err, &fieldErr):
		return invalid(fieldErr.Field, fieldErr.Message)
	case errors.Is(err, counter.ErrMemberRequired):
		return invalid("member", "the counter counts distinct members: send {\"counter\", \"member\"} without delta to Increment (messages cannot carry members); nothing was counted")
	case errors.Is(err, counter.ErrKeyReused): // Increment's answer says more (keyReusedError)
		return failure{status: http.StatusUnprocessableEntity, reason: "key_reused", body: errorBody{Field: wire.AttributeIdempotencyKey,
			Error: "the idempotency key was already used for other increments; nothing was applied; send a new key for new increments"}}
	case status.Code(err) == codes.InvalidArgument:
		return failure{status: http.StatusBadRequest, reason: "invalid_request", log: "the database refused the write", logLevel: slog.LevelWarn,
			body: errorBody{Error: "the database refuses these increments (" + status.Convert(err).Message() + "); nothing was applied"}}
	case errors.Is(err, counter.ErrNotDistinct):
		return invalid("member", "the counter does not count distinct members: configure it with {\"counter\", \"distinct\": true} first, or leave member out; nothing was counted")
	case errors.Is(err, counter.ErrSourceCounter):
		return failure{status: http.StatusConflict, reason: "invalid_request", body: errorBody{Field: "counter",
			Error: "the counter counts documents (a collection counter, COUNTER_SOURCES): write or delete its documents instead; nothing was counted"}}
	case errors.Is(err, counter.ErrDeclared):
		return failure{status: http.StatusConflict, body: errorBody{Field: "counter",
			Error: "the counter counts documents (a collection counter, COUNTER_SOURCES): its value is its documents' count or sum, and its windows and group are its declaration's. " +
				"Write or delete its documents instead of creating or resetting it, change windows or group in the declaration, run `go run ./cmd/sources backfill` for documents written before its declaration, " +
				"and `go run ./cmd/sources repair` if it drifted; nothing was changed"}}
	case errors.Is(err, counter.ErrNotFound):
		how := "with ConfigureCounter or by incrementing it"
		if !a.cfg.CreateOnIncrement {
			how = "with ConfigureCounter (CREATE_ON_INCREMENT is off: increments do not create counters)"
		}
		return failure{status: http.StatusNotFound, reason: "no_counter", body: errorBody{Error: "no such counter; create it " + how, Field: "counter"}}
	case errors.Is(err, counter.ErrOutcomeUnknown):
		// Like Cloud Run's 504 on timeout: unknown outcome.
		return failure{status: http.StatusGatewayTimeout, log: "increment outcome unknown", logLevel: slog.LevelError, logEvent: EventIncrementOutcomeUnknown,
			body: errorBody{Outcome: outcomeUnknown, Error: "the database did not confirm the increment and it may or may not have been applied; " +
				"retry only with the same " + wire.HeaderIdempotencyKey + " header, which applies it at most once"}}
	case errors.Is(err, counter.ErrClosed) || shared.IsRetryable(err):
		f := failure{status: http.StatusServiceUnavailable, retryAfter: true, log: "transient failure", logLevel: slog.LevelWarn,
			body: errorBody{Error: "the database is busy or unavailable; retry after %s s"}}
		if errors.Is(err, counter.ErrNotApplied) {
			f.body = errorBody{Outcome: outcomeNotApplied, Error: "not applied: the database is busy or unavailable, or this instance is stopping; retry after %s s"}
		}
		return f
	default:
		f := failure{status: http.StatusInternalServerError, log: "request failed", logLevel: slog.LevelError, body: errorBody{Error: "internal error"}}
		if errors.Is(err, counter.ErrNotApplied) {
			f.body.Outcome = outcomeNotApplied
		}
		return f
	}
}

// answerError answers a failed request as failureOf says, logging what it says to.
func (a *answerer) answerError(w http.ResponseWriter, r *http.Request, err error) {
	f := a.failureOf(err)
	if f.log != "" {
		attrs := []slog.Attr{slog.String("error", err.Error()), slog.String("path", r.URL.Path)}
		if f.logEvent != "" {
			attrs = append([]slog.Attr{slog.String("event", f.logEvent)}, attrs...)
		}
		a.log.LogAttrs(r.Context(), f.logLevel, f.log, attrs...)
	}
	if f.allow != "" {
		w.Header().Set("Allow", f.allow)
	}
	if f.retryAfter {
		f.body.Error = fmt.Sprintf(f.body.Error, setRetryAfter(w))
	}
	writeJSON(w, f.status, f.body)
}

// A 503's Retry-After is drawn uniformly from [retryAfterMin, retryAfterMax] seconds.
const retryAfterMin, retryAfterMax = 1, 3

// setRetryAfter sets w's Retry-After and returns it in seconds.
func setRetryAfter(w http.ResponseWriter) string {
	seconds := strconv.Itoa(retryAfterMin + rand.IntN(retryAfterMax-retryAfterMin+1))
	w.Header().Set("Retry-After", seconds)
	return seconds
}
