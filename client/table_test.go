package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/option"

	"github.com/shardcount/counters/client"
)

// retryTable is testdata/retry-table.json, which the web client's tests play too.
type retryTable struct {
	Policy struct {
		FirstBackoffMS  int64 `json:"first_backoff_ms"`
		MaxBackoffMS    int64 `json:"max_backoff_ms"`
		MaxRetryAfterMS int64 `json:"max_retry_after_ms"`
	} `json:"policy"`
	Cases []struct {
		Name        string `json:"name"`
		MaxAttempts int    `json:"max_attempts"`
		Answers     []struct {
			Status   int               `json:"status"`
			Headers  map[string]string `json:"headers"`
			Body     json.RawMessage   `json:"body"`
			Text     string            `json:"text"`
			NoAnswer bool              `json:"no_answer"`
		} `json:"answers"`
		Want struct {
			Result   string `json:"result"` // ok, refused, not_applied, unknown
			Attempts int    `json:"attempts"`
			Status   int    `json:"status"`
			Field    string `json:"field"`
			Replayed bool   `json:"replayed"`
		} `json:"want"`
		Waits []struct {
			Exactly *int64 `json:"exactly"`
			AtMost  *int64 `json:"at_most"`
		} `json:"waits"`
	} `json:"cases"`
}

func readRetryTable(t *testing.T) retryTable {
	t.Helper()
	raw, err := os.ReadFile("testdata/retry-table.json")
	if err != nil {
		t.Fatal(err)
	}
	var table retryTable
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	return table
}

// TestRetryTable: the Go client ends every case of the table shared with the web client as the table
// says, resending under one key and waiting as it says.
func TestRetryTable(t *testing.T) {
	table := readRetryTable(t)
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	if client.FirstBackoff != ms(table.Policy.FirstBackoffMS) || client.MaxBackoff != ms(table.Policy.MaxBackoffMS) ||
		client.MaxRetryAfter != ms(table.Policy.MaxRetryAfterMS) {
		t.Fatalf("client's policy %v, %v, %v; the table's %+v", client.FirstBackoff, client.MaxBackoff, client.MaxRetryAfter, table.Policy)
	}
	for _, tc := range table.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			var mu sync.Mutex
			var keys []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				keys = append(keys, r.Header.Get("Idempotency-Key"))
				a := tc.Answers[min(len(keys), len(tc.Answers))-1]
				mu.Unlock()
				if a.NoAnswer {
					conn, _, _ := w.(http.Hijacker).Hijack()
					conn.Close()
					return
				}
				for k, v := range a.Headers {
					w.Header().Set(k, v)
				}
				body := a.Text
				if a.Body != nil {
					w.Header().Set("Content-Type", "application/json")
					body = string(a.Body)
				}
				w.WriteHeader(a.Status)
				_, _ = io.WriteString(w, body)
			}))
			defer srv.Close()
			var waits []time.Duration
			defer client.RecordWaits(&waits)()
			opts := []option.ClientOption{option.WithEndpoint(srv.URL), option.WithHTTPClient(srv.Client())}
			if tc.MaxAttempts > 0 {
				opts = append(opts, client.WithMaxAttempts(tc.MaxAttempts))
			}
			c, err := client.New(context.Background(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Increment(context.Background(), client.Increment{Counter: "likes"})

			var apiErr *client.Error
			errors.As(err, &apiErr)
			result, attempts := "ok", 0
			switch {
			case err == nil:
				attempts = got.Attempts
				if got.Replayed != tc.Want.Replayed {
					t.Errorf("replayed %v, want %v", got.Replayed, tc.Want.Replayed)
				}
			case errors.Is(err, client.ErrOutcomeUnknown):
				result = "unknown"
				var u *client.OutcomeUnknownError
				errors.As(err, &u)
				attempts = u.Attempts
			case apiErr != nil && (apiErr.Status >= 500 || apiErr.Status == http.StatusTooManyRequests):
				result, attempts = "not_applied", len(keys)
			case apiErr != nil:
				result, attempts = "refused", len(keys)
			default:
				t.Fatalf("error %v: none of the table's results", err)
			}
			if result != tc.Want.Result || attempts != tc.Want.Attempts || len(keys) != tc.Want.Attempts {
				t.Errorf("%s after %d attempts (%d requests; error %v), want %s after %d", result, attempts, len(keys), err, tc.Want.Result, tc.Want.Attempts)
			}
			if tc.Want.Status != 0 && (apiErr == nil || apiErr.Status != tc.Want.Status || apiErr.Field != tc.Want.Field) {
				t.Errorf("last answer %+v, want status %d, field %q", apiErr, tc.Want.Status, tc.Want.Field)
			}
			for i, k := range keys {
				if k == "" || k != keys[0] {
					t.Errorf("attempt %d carried key %q, attempt 1 %q: want one key", i+1, k, keys[0])
				}
			}
			if len(waits) != len(tc.Waits) {
				t.Fatalf("waits %v, want %d", waits, len(tc.Waits))
			}
			for i, w := range tc.Waits {
				switch {
				case w.Exactly != nil && waits[i] != ms(*w.Exactly):
					t.Errorf("wait %d: %v, want %v", i+1, waits[i], ms(*w.Exactly))
				case w.AtMost != nil && (waits[i] < 0 || waits[i] > ms(*w.AtMost)):
					t.Errorf("wait %d: %v, want at most %v", i+1, waits[i], ms(*w.AtMost))
				}
			}
		})
	}
}

// TestBackoffIsFullJitter: waits without Retry-After are spread over [0, ceiling], not bunched in
// its upper half, and grow with the attempt up to MaxBackoff.
func TestBackoffIsFullJitter(t *testing.T) {
	for attempt, ceiling := range map[int]time.Duration{1: client.FirstBackoff, 3: 4 * client.FirstBackoff, 20: client.MaxBackoff} {
		var low, high int
		for range 1000 {
			d := client.Backoff(attempt)
			if d < 0 || d > ceiling {
				t.Fatalf("attempt %d: %v outside [0, %v]", attempt, d, ceiling)
			}
			if d < ceiling/4 {
				low++
			}
			if d > ceiling*3/4 {
				high++
			}
		}
		if low < 150 || high < 150 {
			t.Errorf("attempt %d: %d of 1000 waits in the lowest quarter of [0, %v], %d in the highest: want about 250 each", attempt, low, ceiling, high)
		}
	}
}
