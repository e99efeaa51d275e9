package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"time"

	"github.com/shardcount/counters/shared/wire"
)

// outcome is how one increment ended for its client.
type outcome int

const (
	applied    outcome = iota // 200: counted once
	unknown                   // maybe applied, unresolved by a keyed retry
	notApplied                // certainly not applied
)

// Retry policy of the clients.
const (
	maxAttempts     = 8
	maxRetryAfter   = 5 * time.Second
	firstBackoff    = 100 * time.Millisecond
	maxBackoff      = 2 * time.Second
	defaultRetryAft = time.Second
)

// attempt is one request's result.
type attempt struct {
	kind       string // the answer for the report: "200", "503", "sent, connection lost", ...
	result     outcome
	safe       bool // certainly not applied: a retry cannot double it
	retryAfter time.Duration
}

// incrementClient is a client of Increment that retries what was certainly not applied, and unknown
// outcomes only when keyed (same Idempotency-Key).
type incrementClient struct {
	url    string
	keyed  bool
	answer func(kind string) // records every attempt's kind
}

// increment adds 1 to counter, retrying until the outcome is known, attempts run out or giveUp
// passes; it returns the outcome and the number of retries.
func (c *incrementClient) increment(ctx context.Context, counter string, giveUp time.Time) (outcome, int) {
	body, _ := json.Marshal(map[string]any{"counter": counter})
	key := ""
	if c.keyed {
		key = "bench-" + rand.Text()
	}
	backoff := firstBackoff
	for n := 1; ; n++ {
		a := c.send(ctx, body, key)
		c.answer(a.kind)
		retry := a.result == notApplied && a.safe || a.result == unknown && c.keyed
		if a.result == applied || !retry || n == maxAttempts || time.Now().After(giveUp) || ctx.Err() != nil {
			return a.result, n - 1
		}
		wait := backoff
		if a.retryAfter > 0 {
			wait = a.retryAfter
		}
		backoff = min(2*backoff, maxBackoff)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return a.result, n - 1
		}
	}
}

// send makes one attempt and classifies its answer.
func (c *incrementClient) send(ctx context.Context, body []byte, key string) attempt {
	var sent bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { sent = true }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return attempt{kind: "bad request: " + err.Error(), result: notApplied}
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(wire.HeaderIdempotencyKey, key)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		if !sent {
			return attempt{kind: "not sent", result: notApplied, safe: true}
		}
		var timeout interface{ Timeout() bool }
		if errors.As(err, &timeout) && timeout.Timeout() {
			return attempt{kind: "sent, timed out", result: unknown}
		}
		return attempt{kind: "sent, connection lost", result: unknown}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	kind := strconv.Itoa(resp.StatusCode)
	switch {
	case resp.StatusCode/100 == 2:
		return attempt{kind: kind, result: applied}
	case resp.StatusCode == http.StatusServiceUnavailable:
		return attempt{kind: kind, result: notApplied, safe: true, retryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	case resp.StatusCode >= 500:
		return attempt{kind: kind, result: unknown}
	}
	return attempt{kind: kind, result: notApplied}
}

// retryAfter reads a Retry-After of whole seconds, bounded; a missing or odd one means 1 s.
func retryAfter(header string) time.Duration {
	s, err := strconv.Atoi(header)
	if err != nil || s < 0 {
		return defaultRetryAft
	}
	return min(time.Duration(s)*time.Second, maxRetryAfter)
}
