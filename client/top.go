package client

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// TopQuery asks for a group's top list.
type TopQuery struct {
	// Group is the group configured on its counters.
	Group string
	// Window is "" for all-time counts, else "hour", "day" or "month".
	Window string
	// Bucket, with Window, is a bucket label; "" for the latest bucket the list was written for.
	Bucket string
	// Limit is how many counters to answer (1..100); 0 for the API's default (10).
	Limit int
}

// TopList is Top's answer.
type TopList struct {
	Group string `json:"group"`
	// Window is "all" for all-time counts.
	Window string `json:"window"`
	Bucket string `json:"bucket"`
	// Top is the group's counters, highest count first.
	Top []TopEntry `json:"top"`
	// UpdatedAt says as of when; nil before the list's first refresh.
	UpdatedAt *time.Time `json:"updated_at"`
}

// TopEntry is one counter of a top list.
type TopEntry struct {
	Counter string `json:"counter"`
	Count   int64  `json:"count"`
}

// Top reads a group's top list (one document read by the function).
func (c *Client) Top(ctx context.Context, q TopQuery) (*TopList, error) {
	v := url.Values{"group": {q.Group}}
	if q.Window != "" {
		v.Set("window", q.Window)
	}
	if q.Bucket != "" {
		v.Set("bucket", q.Bucket)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out TopList
	if err := c.get(ctx, c.endpoints.Top, v, &out); err != nil {
		return nil, fmt.Errorf("top of group %q: %w", q.Group, err)
	}
	return &out, nil
}
