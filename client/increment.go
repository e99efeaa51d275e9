package client

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"time"
)

// Increment is Delta (0: 1) added to Counter, or Member counted once in a distinct counter. Key ("":
// a random one) is the Idempotency-Key: without an ID token, a secret of 22+ characters.
type Increment struct {
	Counter string
	Delta   int64
	Member  string
	Key     string
}

// Incremented is Increment's answer (docs/api.md) and the Key sent; Replayed: it repeats Key's first.
type Incremented struct {
	Counter    string     `json:"counter"`
	Delta      int64      `json:"delta"`
	Shard      int        `json:"shard"`
	Counted    *bool      `json:"counted,omitempty"`
	ReceivedAt *time.Time `json:"received_at,omitempty"`

	Key      string `json:"-"`
	Replayed bool   `json:"-"`
	Attempts int    `json:"-"`
}

// Increment adds inc: nil means it counted exactly once; ErrOutcomeUnknown, that it may have; any
// other error, that it did not.
func (c *Client) Increment(ctx context.Context, inc Increment) (*Incremented, error) {
	key := inc.Key
	if key == "" {
		key = rand.Text() // 26 characters, 130 random bits
	}
	body := incrementRequest{Counter: inc.Counter}
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

// incrementRequest is Increment's body.
type incrementRequest struct {
	Counter string  `json:"counter"`
	Delta   *int64  `json:"delta,omitempty"`
	Member  *string `json:"member,omitempty"`
}
