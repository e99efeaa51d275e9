package client

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// TopQuery asks for a group's top list (docs/api.md, "Top"); "" or 0 leaves a field out.
type TopQuery struct {
	Group  string
	Window string
	Bucket string
	Limit  int
}

// TopList is Top's answer, highest count first; UpdatedAt is nil before the first refresh.
type TopList struct {
	Group     string     `json:"group"`
	Window    string     `json:"window"`
	Bucket    string     `json:"bucket"`
	Top       []TopEntry `json:"top"`
	UpdatedAt *time.Time `json:"updated_at"`
}

// TopEntry is one counter of a top list.
type TopEntry struct {
	Counter string `json:"counter"`
	Count   int64  `json:"count"`
}

// Top reads a group's top list.
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
