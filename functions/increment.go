package functions

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/shared/wire"
)

// incrementRequest is the body of Increment; incrementResponse is its answer (ReceivedAt always set:
// a time after the function received the increment and before its write committed, so apps show
// their own increment until a roll-up with a later updated_at arrives, and then only the roll-up.
// Unkeyed, it is when the request arrived; keyed, when the write that first applied the key was
// planned, stored with the key, so every answer for the key repeats the first byte for byte).
type (
	incrementRequest  = wire.IncrementRequest
	incrementResponse = wire.IncrementAnswer
)

// incrementMethods are the methods Increment accepts.
var incrementMethods = []string{http.MethodPost}

// headerReplayed marks the answer to a retried Idempotency-Key request: it repeats the first answer.
const headerReplayed = wire.HeaderReplayed

// Increment is the HTTP entry point POST {"counter": "<id>", "delta": <int, default 1>}: it adds delta
// to one shard of the counter, creating the counter on first use. 200 means counted exactly once, 503
// certainly not applied, 504 unknown. With an Idempotency-Key header a key is applied once: a retry
// gets the first answer again, and the key with another increment gets 422. With verified callers on,
// tokens are checked first (401, 403). POST {"counter", "member"} counts member once in a distinct
// counter (with ID tokens, the user); a key applies it once too. Requests, answers and errors:
// docs/api.md.
func (s *Service) Increment(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, s.countedIncrement)
}

func (s *Service) increment(w http.ResponseWriter, r *http.Request) (int, any, error) {
	received := time.Now().UTC()
	if err := checkMethod(r, incrementMethods...); err != nil {
		return 0, nil, err
	}
	caller, err := s.verifiedCaller(w, r)
	if err != nil {
		return 0, nil, err
	}
	var req incrementRequest
	if err := decodeJSONBody(w, r, &req); err != nil {
		return 0, nil, err
	}
	delta := int64(1)
	if req.Delta != nil {
		delta = *req.Delta
	}
	if err := s.checkCounterID(req.Counter); err != nil {
		return 0, nil, err
	}
	if err := shared.ValidateDelta(delta, s.cfg.MaxDelta); err != nil {
		return 0, nil, err
	}
	key, keyed, err := idempotencyKey(r)
	if err != nil {
		return 0, nil, err
	}
	scoped := counter.Key{Source: counter.SourceHTTP, Caller: caller, ID: key}
	if !keyed {
		scoped = counter.Key{}
	}
	if req.Member != nil {
		member, err := memberOf(*req.Member, caller, req.Delta, s.cfg.MaxMemberBytes)
		if err != nil {
			return 0, nil, err
		}
		return s.incrementDistinct(w, r, scoped, req.Counter, member, received)
	}
	status, body, err := s.incrementDelta(w, r, caller, key, keyed, shared.Increment{Counter: req.Counter, Delta: delta}, received)
	if errors.Is(err, counter.ErrMemberRequired) && callerauth.IsUser(caller) && req.Delta == nil {
		// A distinct counter with verified users counts the user.
		return s.incrementDistinct(w, r, scoped, req.Counter, caller, received)
	}
	return status, body, err
}

// memberOf is the member a member increment counts: the verified user when there is one (member
// must then be the user's identity or ID), else member, as the client (or, under App Check alone,
// the app) sent it, of at most maxBytes; delta must be absent or 1.
func memberOf(member, caller string, delta *int64, maxBytes int) (string, error) {
	switch {
	case delta != nil && *delta != 1:
		return "", &shared.FieldError{Field: "delta", Message: "a member is counted once: leave delta out (or send 1)"}
	case !callerauth.IsUser(caller):
		return member, shared.ValidateMember(member, maxBytes)
	case member != caller && "user:"+member != caller:
		return "", &shared.FieldError{Field: "member", Message: "with ID tokens the member is the signed-in user: leave member out (or send your user ID)"}
	}
	return caller, nil
}

// incrementDistinct counts member once in distinct counter id, once per key unless key.ID is empty.
func (s *Service) incrementDistinct(w http.ResponseWriter, r *http.Request, key counter.Key, id, member string, received time.Time) (int, any, error) {
	var keyed *counter.Key
	if key.ID != "" {
		keyed = &key
	}
	out, err := s.counters.IncrementDistinct(r.Context(), id, member, keyed)
	if errors.Is(err, counter.ErrKeyReused) {
		return 0, nil, keyReusedError("for another increment")
	}
	if err != nil {
		return 0, nil, err
	}
	var delta int64
	if out.Shard >= 0 { // the member was new all time or in a bucket
		delta = 1
	}
	resp := incrementResponse{Counter: id, Delta: delta, Shard: out.Shard, Counted: &out.Counted, ReceivedAt: &received}
	if keyed != nil {
		resp.ReceivedAt = &out.PlannedAt
	}
	if out.Duplicate {
		w.Header().Set(headerReplayed, "true")
	}
	return http.StatusOK, resp, nil
}

// incrementDelta adds inc: within PER_CALLER_LIMIT, once per key, or plainly.
func (s *Service) incrementDelta(w http.ResponseWriter, r *http.Request, caller, key string, keyed bool, inc shared.Increment, received time.Time) (int, any, error) {
	scoped := counter.Key{Source: counter.SourceHTTP, Caller: caller, ID: key}
	if s.cfg.PerCallerLimit > 0 {
		var limitedKey *counter.Key
		if keyed {
			limitedKey = &scoped
		}
		return s.incrementLimited(w, r, caller, limitedKey, inc, received)
	}
	if keyed {
		return s.incrementOnce(w, r, scoped, inc)
	}
	shard, err := s.counters.Increment(r.Context(), inc.Counter, inc.Delta)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, incrementResponse{Counter: inc.Counter, Delta: inc.Delta, Shard: shard, ReceivedAt: &received}, nil
}

// idempotencyKey reads the optional Idempotency-Key header; keyed is false when there is none.
func idempotencyKey(r *http.Request) (key string, keyed bool, err error) {
	values := r.Header.Values(shared.HeaderIdempotencyKey)
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
		return values[0], true, shared.ValidateIdempotencyKey(values[0], shared.HeaderIdempotencyKey)
	}
	return "", false, &shared.FieldError{Field: shared.HeaderIdempotencyKey,
		Message: fmt.Sprintf("send one %s header, got %d", shared.HeaderIdempotencyKey, len(values))}
}

// incrementOnce applies inc once for key (scoped to its verified caller, if any) and answers as the
// key's first request was answered, received_at included.
func (s *Service) incrementOnce(w http.ResponseWriter, r *http.Request, key counter.Key, inc shared.Increment) (int, any, error) {
	out, err := s.counters.ApplyOnce(r.Context(), key, []shared.Increment{inc})
	if errors.Is(err, counter.ErrKeyReused) {
		// Only the verified caller who spent the key learns what for: an unscoped key is anyone's to guess.
		if first := out.Applied; key.Caller != "" && len(first) == 1 {
			return 0, nil, keyReusedError(fmt.Sprintf("to add %d to counter %q", first[0].Delta, first[0].Counter))
		}
		return 0, nil, keyReusedError("for another increment")
	}
	if err != nil {
		return 0, nil, err
	}
	if out.Duplicate {
		w.Header().Set(headerReplayed, "true")
	}
	first := out.Applied[0]
	return http.StatusOK, incrementResponse{Counter: first.Counter, Delta: first.Delta, Shard: first.Shard, ReceivedAt: &out.PlannedAt}, nil
}

// keyReusedError is the 422 of an Idempotency-Key that was spent on another increment (first says on
// what, to the caller who spent it, or only that it was another increment).
func keyReusedError(first string) error {
	return &requestError{
		status: http.StatusUnprocessableEntity,
		field:  shared.HeaderIdempotencyKey,
		message: fmt.Sprintf("this %s was already used %s; nothing was changed; send a new key for a new increment",
			shared.HeaderIdempotencyKey, first),
	}
}
