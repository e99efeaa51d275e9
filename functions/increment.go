package functions

import (
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared/wire"
)

// incrementRequest is the body of Increment; incrementResponse is its answer (docs/api.md).
type (
	incrementRequest  = wire.IncrementRequest
	incrementResponse wire.IncrementAnswer
)

func (incrementResponse) status() int { return http.StatusOK }

// incrementMethods are the methods Increment accepts.
var incrementMethods = []string{http.MethodPost}

// headerReplayed marks a repeated answer to a retried Idempotency-Key.
const headerReplayed = wire.HeaderReplayed

// Increment is the HTTP entry point POST {"counter", "delta"} (or "member"): 200 counted exactly
// once, 503 certainly not applied, 504 unknown; an Idempotency-Key applies once. See docs/api.md.
func (h *incrementHandler) Increment(w http.ResponseWriter, r *http.Request) {
	serve(&h.answerer, w, r, h.countedIncrement)
}

// incrementResult is Increment's answer and the domain's Result.
type incrementResult struct {
	answer  incrementResponse
	applied counter.Result
}

func (h *incrementHandler) increment(w http.ResponseWriter, r *http.Request) (incrementResult, error) {
	received := time.Now().UTC()
	if err := checkMethod(r, incrementMethods...); err != nil {
		return incrementResult{}, err
	}
	caller, err := h.verifiedCaller(w, r)
	if err != nil {
		return incrementResult{}, err
	}
	var body incrementRequest
	if err := decodeJSONBody(w, r, &body); err != nil {
		return incrementResult{}, err
	}
	req := counter.Request{Counter: body.Counter, Delta: 1}
	if body.Delta != nil {
		req.Delta = *body.Delta
	}
	if err := h.checkIncrementedCounterID(req.Counter); err != nil {
		return incrementResult{}, err
	}
	if err := wire.ValidateDelta(req.Delta, h.cfg.MaxDelta); err != nil {
		return incrementResult{}, err
	}
	key, keyed, err := idempotencyKey(r, caller)
	if err != nil {
		return incrementResult{}, err
	}
	if keyed {
		req.Key = &counter.Key{Source: counter.SourceHTTP, Caller: caller, ID: key}
	}
	if body.Member != nil {
		if req.Member, err = memberOf(*body.Member, caller, body.Delta, h.cfg.MaxMemberBytes); err != nil {
			return incrementResult{}, err
		}
		return h.answerIncrement(r, req, received)
	}
	if h.cfg.PerCallerLimit > 0 {
		req.Caller, req.Limit = caller, h.cfg.PerCallerLimit
	}
	res, err := h.answerIncrement(r, req, received)
	if errors.Is(err, counter.ErrMemberRequired) && callerauth.IsUser(caller) && body.Delta == nil {
		// A distinct counter with verified users counts the user.
		req.Caller, req.Limit, req.Member = "", 0, caller
		return h.answerIncrement(r, req, received)
	}
	return res, err
}

// checkIncrementedCounterID is checkWritableCounterID for an increment: a counter ID that a
// declaration of COUNTER_SOURCES builds is its documents' alone (counter.ErrSourceCounter), even
// before its first document makes it.
func (h *incrementHandler) checkIncrementedCounterID(id string) error {
	if err := h.checkWritableCounterID(id); err != nil {
		return err
	}
	if h.counting.Declares(id) {
		return fmt.Errorf("counter %q: %w", id, counter.ErrSourceCounter)
	}
	return nil
}

// memberOf is the member an increment counts: the verified user if any, else member (≤ maxBytes).
func memberOf(member, caller string, delta *int64, maxBytes int) (string, error) {
	switch {
	case delta != nil && *delta != 1:
		return "", &wire.FieldError{Field: "delta", Message: "a member is counted once: leave delta out (or send 1)"}
	case !callerauth.IsUser(caller):
		return member, wire.ValidateMember(member, maxBytes)
	case member != caller && "user:"+member != caller:
		return "", &wire.FieldError{Field: "member", Message: "with ID tokens the member is the signed-in user: leave member out (or send your user ID)"}
	}
	return caller, nil
}

// answerIncrement increments req, received at received, and answers.
func (h *incrementHandler) answerIncrement(r *http.Request, req counter.Request, received time.Time) (incrementResult, error) {
	res, err := h.increments.Increment(r.Context(), req)
	if errors.Is(err, counter.ErrKeyReused) {
		// Only the caller who spent the key learns what for.
		if first := res.Applied; req.Member == "" && req.Limit == 0 && callerauth.IsUser(req.Key.Caller) && len(first) == 1 {
			return incrementResult{}, keyReusedError(fmt.Sprintf("to add %d to counter %q", first[0].Delta, first[0].Counter))
		}
		return incrementResult{}, keyReusedError("for another increment")
	}
	if err != nil {
		return incrementResult{}, err
	}
	applied := res.Applied[0]
	answer := incrementResponse{Counter: req.Counter, Delta: req.Delta, Shard: applied.Shard, ReceivedAt: &received}
	if req.Key != nil {
		answer.ReceivedAt = &res.PlannedAt
	}
	switch {
	case req.Member != "":
		answer.Delta, answer.Counted = applied.Delta, &res.Counted
	case req.Limit > 0:
		answer.Counted = &res.Counted
	}
	return incrementResult{answer: answer, applied: res}, nil
}

// minSecretKeyChars is the shortest key of a caller who is no verified user: the key is a bearer
// secret (22 base64url characters hold 128 bits).
const minSecretKeyChars = 22

// idempotencyKey reads the optional Idempotency-Key header; keyed is false when there is none.
func idempotencyKey(r *http.Request, caller string) (key string, keyed bool, err error) {
	values := r.Header.Values(wire.HeaderIdempotencyKey)
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
		key = values[0]
		if err := wire.ValidateIdempotencyKey(key, wire.HeaderIdempotencyKey); err != nil {
			return "", false, err
		}
		if n := utf8.RuneCountInString(key); n < minSecretKeyChars && !callerauth.IsUser(caller) {
			return "", false, &wire.FieldError{Field: wire.HeaderIdempotencyKey, Message: fmt.Sprintf(
				"without an ID token an %s is a secret: send a random one of at least %d characters (a UUID has 36), not %d",
				wire.HeaderIdempotencyKey, minSecretKeyChars, n)}
		}
		return key, true, nil
	}
	return "", false, &wire.FieldError{Field: wire.HeaderIdempotencyKey,
		Message: fmt.Sprintf("send one %s header, got %d", wire.HeaderIdempotencyKey, len(values))}
}

// keyReusedError is the 422 of an Idempotency-Key spent on another increment.
func keyReusedError(first string) error {
	return &requestError{
		status: http.StatusUnprocessableEntity,
		field:  wire.HeaderIdempotencyKey,
		message: fmt.Sprintf("this %s was already used %s; nothing was changed; send a new key for a new increment",
			wire.HeaderIdempotencyKey, first),
	}
}
