package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Counted is Count's answer: the exact value and the roll-up (nil before the first).
type Counted struct {
	Counter   string  `json:"counter"`
	Count     int64   `json:"count"`
	NumShards int     `json:"num_shards"`
	Rollup    *Rollup `json:"rollup"`
}

// Rollup is a counter's roll-up, computed at UpdatedAt.
type Rollup struct {
	Count     int64     `json:"count"`
	UpdatedAt time.Time `json:"updated_at"`
}

// WindowCounted is Count's answer for one UTC bucket of a window.
type WindowCounted struct {
	Counter string `json:"counter"`
	Window  string `json:"window"`
	// Bucket: 2026-11-23T18 (hour), 2026-11-23 (day), 2026-11 (month).
	Bucket  string   `json:"bucket"`
	Count   int64    `json:"count"`
	Windows []string `json:"windows"`
}

// Count reads a counter's exact value and roll-up; an unknown counter is an *Error of Status 404.
func (c *Client) Count(ctx context.Context, counter string) (*Counted, error) {
	var out Counted
	if err := c.get(ctx, c.endpoints.Count, url.Values{"counter": {counter}}, &out); err != nil {
		return nil, fmt.Errorf("count %q: %w", counter, err)
	}
	return &out, nil
}

// WindowCount reads a counter's count in bucket ("": the current) of window.
func (c *Client) WindowCount(ctx context.Context, counter, window, bucket string) (*WindowCounted, error) {
	q := url.Values{"counter": {counter}, "window": {window}}
	if bucket != "" {
		q.Set("bucket", bucket)
	}
	var out WindowCounted
	if err := c.get(ctx, c.endpoints.Count, q, &out); err != nil {
		return nil, fmt.Errorf("count %q in window %s: %w", counter, window, err)
	}
	return &out, nil
}

func (c *Client) get(ctx context.Context, endpoint string, query url.Values, out any) error {
	_, err := c.do(ctx, call{method: http.MethodGet, endpoint: endpoint, query: query, resendUnknown: true}, out)
	return err
}
