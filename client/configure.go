package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Settings configure a counter; a nil field is left as it is, and one besides Counter must be set.
type Settings struct {
	Counter   string    `json:"counter"`
	NumShards *int      `json:"num_shards,omitempty"`
	MinShards *int      `json:"min_shards,omitempty"`
	MaxShards *int      `json:"max_shards,omitempty"`
	Windows   *[]string `json:"windows,omitempty"`
	Distinct  *bool     `json:"distinct,omitempty"`
	Group     *string   `json:"group,omitempty"`
}

// Configuration is ConfigureCounter's answer.
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

// ConfigureCounter creates a counter or changes its settings, never its value. Created is false
// when a resend found the counter its first attempt created.
func (c *Client) ConfigureCounter(ctx context.Context, s Settings) (*Configuration, error) {
	var out Configuration
	if _, err := c.do(ctx, call{method: http.MethodPut, endpoint: c.endpoints.ConfigureCounter, body: s, resendUnknown: true}, &out); err != nil {
		return nil, fmt.Errorf("configure counter %q: %w", s.Counter, err)
	}
	return &out, nil
}

// ResetCounter zeroes a counter (buckets and caller totals too) and returns the discarded value. It
// is not resent after an unknown outcome.
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

// DeleteCounter deletes a counter with its shards and roll-up. It is not resent after an unknown
// outcome.
func (c *Client) DeleteCounter(ctx context.Context, counter string) error {
	q := url.Values{"counter": {counter}}
	if _, err := c.do(ctx, call{method: http.MethodDelete, endpoint: c.endpoints.ConfigureCounter, query: q}, nil); err != nil {
		return fmt.Errorf("delete counter %q: %w", counter, err)
	}
	return nil
}
