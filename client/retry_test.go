package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/option"

	"github.com/shardcount/counters/client"
)

// scripted is a server that answers the nth request with answers[n] (the last one repeated) and
// records what it received.
type scripted struct {
	mu       sync.Mutex
	answers  []scriptedAnswer
	received []received
}

type scriptedAnswer struct {
	status int
	header map[string]string
	body   string
}

type received struct {
	at     time.Time
	method string
	url    string
	key    string
	body   string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.received)
	s.received = append(s.received, received{at: time.Now(), method: r.Method, url: r.URL.String(), key: r.Header.Get("Idempotency-Key"), body: string(body)})
	a := s.answers[min(n, len(s.answers)-1)]
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (s *scripted) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.received...)
}

// newScripted serves answers and returns a client of it (no ID tokens) and the server.
func newScripted(t *testing.T, opts []option.ClientOption, answers ...scriptedAnswer) (*client.Client, *scripted) {
	t.Helper()
	s := &scripted{answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := client.New(context.Background(), append([]option.ClientOption{option.WithEndpoint(srv.URL), option.WithHTTPClient(srv.Client())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

const okIncrement = `{"counter":"likes","delta":1,"shard":3}`

var (
	unavailable = scriptedAnswer{status: 503, header: map[string]string{"Retry-After": "1"}, body: `{"error":"not applied: retry after 1 s","outcome":"not_applied"}`}
	unknown     = scriptedAnswer{status: 504, body: `{"error":"the database did not confirm the increment","outcome":"unknown"}`}
)

func TestIncrementResendsA503AfterRetryAfter(t *testing.T) {
	c, srv := newScripted(t, nil, unavailable, scriptedAnswer{status: 200, body: okIncrement})
	got, err := c.Increment(context.Background(), client.Increment{Counter: "likes"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 2 || got.Attempts != 2 {
		t.Fatalf("sent %d times (Attempts %d), want 2", len(reqs), got.Attempts)
	}
	if reqs[0].key == "" || reqs[1].key != reqs[0].key || got.Key != reqs[0].key {
		t.Errorf("keys %q, %q, answer's %q: want one generated key on both attempts", reqs[0].key, reqs[1].key, got.Key)
	}
	if gap := reqs[1].at.Sub(reqs[0].at); gap < time.Second {
		t.Errorf("resent %s after the 503, want at least its Retry-After (1 s)", gap)
	}
	if got.Counter != "likes" || got.Delta != 1 || got.Shard != 3 || got.Replayed {
		t.Errorf("answer %+v", got)
	}
	if reqs[0].body != `{"counter":"likes"}` {
		t.Errorf("body %s, want no delta (the API's default 1)", reqs[0].body)
	}
}

func TestIncrementResendsUnknownOutcomesWithTheSameKey(t *testing.T) {
	c, srv := newScripted(t, nil, unknown, unknown,
		scriptedAnswer{status: 200, header: map[string]string{"Idempotent-Replayed": "true"}, body: okIncrement})
	got, err := c.Increment(context.Background(), client.Increment{Counter: "likes", Delta: 5, Key: "order-42"})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range srv.requests() {
		if r.key != "order-42" || r.body != `{"counter":"likes","delta":5}` {
			t.Errorf("attempt %d: key %q, body %s", i+1, r.key, r.body)
		}
	}
	if got.Attempts != 3 || !got.Replayed || got.Key != "order-42" {
		t.Errorf("answer %+v, want 3 attempts, replayed, key order-42", got)
	}
}

func TestIncrementUnknownAfterTheBoundIsItsOwnError(t *testing.T) {
	c, srv := newScripted(t, []option.ClientOption{client.WithMaxAttempts(3)}, unknown)
	_, err := c.Increment(context.Background(), client.Increment{Counter: "likes", Key: "order-43"})
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("error %v, want ErrOutcomeUnknown", err)
	}
	var u *client.OutcomeUnknownError
	if !errors.As(err, &u) || u.Key != "order-43" || u.Attempts != 3 {
		t.Errorf("error %#v, want key order-43 after 3 attempts", u)
	}
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 504 || apiErr.Outcome != "unknown" {
		t.Errorf("last answer %+v, want the 504", apiErr)
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("sent %d times, want 3", n)
	}
}

func TestIncrement503sUntilTheBoundAreNotApplied(t *testing.T) {
	c, _ := newScripted(t, []option.ClientOption{client.WithMaxAttempts(1)}, unavailable)
	_, err := c.Increment(context.Background(), client.Increment{Counter: "likes"})
	var apiErr *client.Error
	if errors.Is(err, client.ErrOutcomeUnknown) || !errors.As(err, &apiErr) || apiErr.Status != 503 || apiErr.RetryAfter != time.Second || apiErr.Outcome != "not_applied" {
		t.Errorf("error %v (%+v), want the 503 (not applied), not an unknown outcome", err, apiErr)
	}
}

func TestRefusalIsATypedErrorSentOnce(t *testing.T) {
	c, srv := newScripted(t, nil, scriptedAnswer{status: 400, body: `{"error":"delta must not be 0","field":"delta"}`})
	_, err := c.Increment(context.Background(), client.Increment{Counter: "likes", Delta: 2})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Field != "delta" || apiErr.Message != "delta must not be 0" {
		t.Fatalf("error %v, want *Error 400 on delta with the API's message", err)
	}
	if errors.Is(err, client.ErrOutcomeUnknown) || len(srv.requests()) != 1 {
		t.Errorf("sent %d times; unknown: %v", len(srv.requests()), errors.Is(err, client.ErrOutcomeUnknown))
	}
}

func TestRefusalAfterAnUnknownOutcomeIsUnknown(t *testing.T) {
	c, _ := newScripted(t, nil, unknown, scriptedAnswer{status: 404, body: `{"error":"no such counter","field":"counter"}`})
	_, err := c.Increment(context.Background(), client.Increment{Counter: "likes"})
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("error %v: the first attempt may have applied, want ErrOutcomeUnknown", err)
	}
}

func TestLostAnswerIsResentWithTheSameKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		first := len(keys) == 1
		mu.Unlock()
		if first { // the connection ends before the answer: the client cannot know
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		_, _ = io.WriteString(w, okIncrement)
	}))
	defer srv.Close()
	c, err := client.New(context.Background(), option.WithEndpoint(srv.URL), option.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Increment(context.Background(), client.Increment{Counter: "likes"}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != keys[1] {
		t.Errorf("keys sent %q, want the same key twice", keys)
	}
}

func TestResetAndDeleteAreNotResentAfterAnUnknownOutcome(t *testing.T) {
	c, srv := newScripted(t, nil, unknown)
	if _, err := c.ResetCounter(context.Background(), "likes"); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("reset: %v, want ErrOutcomeUnknown", err)
	}
	if err := c.DeleteCounter(context.Background(), "likes"); !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("delete: %v, want ErrOutcomeUnknown", err)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("sent %d requests, want one each", n)
	}
}

func TestReadsAreResentAndDecoded(t *testing.T) {
	c, srv := newScripted(t, nil, unknown, scriptedAnswer{status: 200,
		body: `{"counter":"likes","count":13,"num_shards":10,"rollup":{"count":12,"updated_at":"2026-11-21T06:00:12.0965Z"}}`})
	got, err := c.Count(context.Background(), "likes")
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 21, 6, 0, 12, 96500000, time.UTC)
	if got.Count != 13 || got.NumShards != 10 || got.Rollup == nil || got.Rollup.Count != 12 || !got.Rollup.UpdatedAt.Equal(want) {
		t.Errorf("answer %+v, rollup %+v", got, got.Rollup)
	}
	if reqs := srv.requests(); len(reqs) != 2 || reqs[1].method != http.MethodGet || reqs[1].url != "/Count?counter=likes" {
		t.Errorf("requests %+v", reqs)
	}
}

func TestContextEndsTheWait(t *testing.T) {
	c, _ := newScripted(t, nil, scriptedAnswer{status: 503, header: map[string]string{"Retry-After": "60"}, body: `{"error":"busy","outcome":"not_applied"}`})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Increment(ctx, client.Increment{Counter: "likes"})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("error %v, want the deadline (and not an unknown outcome: the 503 was not applied)", err)
	}
}

func TestEndedContextSendsNothing(t *testing.T) {
	c, srv := newScripted(t, nil, scriptedAnswer{status: 200, body: okIncrement})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Increment(ctx, client.Increment{Counter: "likes"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, client.ErrOutcomeUnknown) || len(srv.requests()) != 0 {
		t.Errorf("error %v after %d requests, want context.Canceled, nothing sent, not an unknown outcome", err, len(srv.requests()))
	}
}

func TestMissingEndpoint(t *testing.T) {
	c, err := client.New(context.Background(), client.WithEndpoints(client.Endpoints{Count: "http://127.0.0.1:1/Count"}), option.WithHTTPClient(http.DefaultClient))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Top(context.Background(), client.TopQuery{Group: "g"}); err == nil || !strings.Contains(err.Error(), "no URL") {
		t.Errorf("Top without its URL: %v", err)
	}
}
