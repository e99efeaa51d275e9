package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/shardcount/counters/shared/wire"
)

// Increment is one increment: Delta added to Counter, or Member counted once in a distinct counter.
type Increment struct {
	// Counter is the counter's ID.
	Counter string
	// Delta is added to the counter; 0 sends none, which the functions take as 1. Leave it 0 for a
	// member.
	Delta int64
	// Member, for a counter configured as distinct, is who or what is counted once ("": none).
	Member string
	// Key is the Idempotency-Key: the increment counts once per key (for DEDUPE_TTL). Empty: the
	// client makes a random one, used by every attempt of this call.
	Key string
}

// Incremented is Increment's answer, as the function sends it (wire.IncrementAnswer: Counter,
// Delta, Shard, Counted, ReceivedAt), with what the client saw.
type Incremented struct {
	wire.IncrementAnswer

	// Key is the Idempotency-Key the increment was sent with.
	Key string `json:"-"`
	// Replayed is true when the answer repeats the first answer to Key (Idempotent-Replayed): an
	// earlier attempt, or an earlier call with this key, had applied it.
	Replayed bool `json:"-"`
	// Attempts is how often the call was sent.
	Attempts int `json:"-"`
}

// Increment adds inc once: a nil error means it counted exactly once, however often it was sent.
// Errors: *Error for a refusal (4xx) or when the attempts ran out on answers that applied nothing
// (503, 429, a 5xx saying "not_applied"); an error that errors.Is ErrOutcomeUnknown when it may or
// may not have counted (a 500 without "not_applied" is such an answer, resent with the same key).
func (c *Client) Increment(ctx context.Context, inc Increment) (*Incremented, error) {
	key := inc.Key
	if key == "" {
		key = uuid.NewString()
	}
	body := wire.IncrementRequest{Counter: inc.Counter}
	if inc.Delta != 0 {
		body.Delta = &inc.Delta
	}
	if inc.Member != "" {
		body.Member = &inc.Member
	}
	var out Incremented
	ans, err := c.do(ctx, call{method: http.MethodPost, endpoint: c.endpoints.Increment, body: body, key: key, resendUnknown: true}, &out)
	if err != nil {
		return nil, fmt.Errorf("increment %q: %w", inc.Counter, err)
	}
	out.Key, out.Attempts, out.Replayed = key, ans.attempts, ans.header.Get(headerReplayed) == "true"
	return &out, nil
}
