package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Settings configure a counter (ConfigureCounter's PUT); a nil field is left as it is. At least one
// field besides Counter must be set.
type Settings struct {
	Counter string `json:"counter"`
	// NumShards alone pins the shard count; with MinShards or MaxShards it is where an adaptive count
	// starts.
	NumShards *int `json:"num_shards,omitempty"`
	// MinShards and MaxShards make the shard count adaptive within them.
	MinShards *int `json:"min_shards,omitempty"`
	MaxShards *int `json:"max_shards,omitempty"`
	// Windows replaces the windows the counter counts in ("hour", "day", "month"; empty: none).
	Windows *[]string `json:"windows,omitempty"`
	// Distinct makes the counter count distinct members (true) or deltas (false).
	Distinct *bool `json:"distinct,omitempty"`
	// Group puts the counter in the group's top lists ("": none).
	Group *string `json:"group,omitempty"`
}

// Configuration is ConfigureCounter's answer to Settings.
type Configuration struct {
	Counter           string   `json:"counter"`
	NumShards         int      `json:"num_shards"`
	MinShards         int      `json:"min_shards"`
	MaxShards         int      `json:"max_shards"`
	Adaptive          bool     `json:"adaptive"`
	PreviousNumShards int      `json:"previous_num_shards"`
	Created           bool     `json:"created"`
	Windows           []string `json:"windows,omitempty"`
	Distinct          bool     `json:"distinct,omitempty"`
	Group             string   `json:"group,omitempty"`
}

// ConfigureCounter creates a counter or changes its settings; the value never changes. It is resent
// after unknown outcomes (the same settings twice are the settings once), so Created may be false on
// an answer to a resend that found the counter its first attempt created.
func (c *Client) ConfigureCounter(ctx context.Context, s Settings) (*Configuration, error) {
	var out Configuration
	if _, err := c.do(ctx, call{method: http.MethodPut, endpoint: c.endpoints.ConfigureCounter, body: s, resendUnknown: true}, &out); err != nil {
		return nil, fmt.Errorf("configure counter %q: %w", s.Counter, err)
	}
	return &out, nil
}

// ResetCounter sets a counter's value (and its window buckets and per-user totals) to zero and
// returns the value it discarded. It is resent after 503 only: a resent reset would discard the
// increments acknowledged in between, so an unknown outcome is returned as one.
func (c *Client) ResetCounter(ctx context.Context, counter string) (discarded int64, err error) {
	var out struct {
		Discarded int64 `json:"discarded"`
	}
	body := map[string]any{"counter": counter, "reset": true}
	if _, err := c.do(ctx, call{method: http.MethodPost, endpoint: c.endpoints.ConfigureCounter, body: body}, &out); err != nil {
		return 0, fmt.Errorf("reset counter %q: %w", counter, err)
	}
	return out.Discarded, nil
}

// DeleteCounter deletes a counter with its shards and roll-up. It is resent after 503 only (a resent
// delete of a deleted counter would answer 404), so an unknown outcome is returned as one.
func (c *Client) DeleteCounter(ctx context.Context, counter string) error {
	q := url.Values{"counter": {counter}}
	if _, err := c.do(ctx, call{method: http.MethodDelete, endpoint: c.endpoints.ConfigureCounter, query: q}, nil); err != nil {
		return fmt.Errorf("delete counter %q: %w", counter, err)
	}
	return nil
}
