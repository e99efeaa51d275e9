package clientstack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/api/option"

	"github.com/shardcount/counters/client"
	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/functionsproc"
	"github.com/shardcount/counters/internal/testenv"
)

// stack is a functions process of the local stack whose Firestore traffic passes a fault proxy, on a
// project of its own, and the truth read from the emulator directly.
type stack struct {
	url   string
	proxy *faultproxy.Proxy
	exact *counter.Store
}

// startStack starts the functions (with settings, NAME=VALUE) behind a fault proxy that injects
// nothing until the test sets faults.
func startStack(t *testing.T, settings ...string) stack {
	t.Helper()
	host := testenv.FirestoreEmulatorHost(t)
	project := testenv.NewProjectID()
	proxy, err := faultproxy.Start(host, faultproxy.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	url := functionsproc.Start(t, append([]string{"FIRESTORE_EMULATOR_HOST=" + proxy.Addr(), "GOOGLE_CLOUD_PROJECT=" + project}, settings...)...)
	return stack{url: url, proxy: proxy, exact: counter.NewStore(testenv.FirestoreOf(t, project), config.Default().Schema(), counter.Options{})}
}

// sum is counter id's exact value, read from the emulator without the proxy.
func (s stack) sum(t *testing.T, id string) int64 {
	t.Helper()
	n, err := s.exact.Reader.Sum(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// watched is a RoundTripper that counts the answers the client got, and may lose answers on the way
// back: the request reaches the functions and is answered, and the client gets a transport error.
type watched struct {
	base     http.RoundTripper
	statuses sync.Map // status (0: lost) -> *atomic.Int64
	// lose, when set, says whether to lose the answer to the nth request (from 1).
	lose func(n int64) bool
	// onAnswer, when set, sees every answer that reaches the client.
	onAnswer func(*http.Response)
	sent     atomic.Int64
}

func (w *watched) RoundTrip(r *http.Request) (*http.Response, error) {
	n := w.sent.Add(1)
	resp, err := w.base.RoundTrip(r)
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	if err == nil && w.lose != nil && w.lose(n) {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		resp, err, status = nil, errors.New("connection reset (the test lost the answer)"), -1
	}
	c, _ := w.statuses.LoadOrStore(status, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	if err == nil && w.onAnswer != nil {
		w.onAnswer(resp)
	}
	return resp, err
}

func (w *watched) seen() map[int]int64 {
	m := map[int]int64{}
	w.statuses.Range(func(k, v any) bool { m[k.(int)] = v.(*atomic.Int64).Load(); return true })
	return m
}

// newStackClient is a client of s without ID tokens (the local stack checks no IAM), through w.
func newStackClient(t *testing.T, s stack, w *watched, opts ...option.ClientOption) *client.Client {
	t.Helper()
	w.base = &http.Transport{MaxIdleConnsPerHost: 64}
	c, err := client.New(context.Background(), append([]option.ClientOption{option.WithEndpoint(s.url), option.WithHTTPClient(&http.Client{Transport: w, Timeout: time.Minute})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// incrementConcurrently has clients goroutines make perClient increments each through c, client i of
// counter ids[i%len(ids)], and returns how many were acknowledged and how many ended with an unknown
// outcome; any other error fails t.
func incrementConcurrently(t *testing.T, c *client.Client, ids []string, clients, perClient int) (acked, unknown int64) {
	t.Helper()
	var a, u atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for range perClient {
				_, err := c.Increment(context.Background(), client.Increment{Counter: ids[i%len(ids)]})
				switch {
				case err == nil:
					a.Add(1)
				case errors.Is(err, client.ErrOutcomeUnknown):
					u.Add(1)
				default:
					t.Errorf("increment: %v", err)
				}
			}
		})
	}
	wg.Wait()
	return a.Load(), u.Load()
}

// checkCountedOnce holds the sum of counters ids of s to exactly the increments acknowledged, or,
// when some ended unknown, between acknowledged and those plus the unknown ones.
func checkCountedOnce(t *testing.T, s stack, ids []string, acked, unknown int64) {
	t.Helper()
	var got int64
	for _, id := range ids {
		got += s.sum(t, id)
	}
	switch {
	case unknown == 0 && got != acked:
		t.Errorf("counter = %d, acknowledged %d: every acknowledged increment must count exactly once, resends included", got, acked)
	case got < acked || got > acked+unknown:
		t.Errorf("counter = %d, want from %d (acknowledged) to %d (plus outcomes unknown)", got, acked, acked+unknown)
	}
}

// TestIncrementResentWhenFirestoreAnswersAreLostCountsOnce puts the fault proxy between the
// functions and Firestore. First every request that touches the dedupe records (every keyed
// increment's commit, its fences and read-backs) loses its answer after it applied, until the
// functions give up and answer 504 (outcome unknown); then, from the first 504 on, 10% of those
// requests are reset and 30% lose their answer. Each client counts on a counter of its own, so the
// outage holds a commit of each. The client resends each increment with its key. Each increment
// acknowledged counts exactly once.
func TestIncrementResentWhenFirestoreAnswersAreLostCountsOnce(t *testing.T) {
	const clients, perClient = 8, 10
	s := startStack(t)
	dedupe := []byte(config.Default().Schema().Dedupe + "/")
	var flaky sync.Once
	w := &watched{onAnswer: func(r *http.Response) {
		if r.StatusCode == http.StatusGatewayTimeout {
			flaky.Do(func() { s.proxy.SetFaults(faultproxy.Faults{ResetRate: 0.1, DropResponseRate: 0.3, Match: dedupe}) })
		}
	}}
	c := newStackClient(t, s, w, client.WithMaxAttempts(30))
	ctx := context.Background()
	ids := make([]string, clients)
	ten := 10
	for i := range ids {
		ids[i] = testenv.UniqueID("client-faults")
		if _, err := c.ConfigureCounter(ctx, client.Settings{Counter: ids[i], NumShards: &ten}); err != nil {
			t.Fatal(err)
		}
	}
	s.proxy.SetFaults(faultproxy.Faults{DropResponseRate: 1, Match: dedupe})
	acked, unknown := incrementConcurrently(t, c, ids, clients, perClient)
	s.proxy.SetFaults(faultproxy.Faults{})

	seen := w.seen()
	counts := s.proxy.Counts()
	t.Logf("%d increments acknowledged, %d unknown after the bound; answers %v; proxy: %d resets, %d answers dropped",
		acked, unknown, seen, counts.Resets, counts.DroppedResponses)
	if seen[http.StatusGatewayTimeout] == 0 {
		t.Fatalf("no 504 reached the client (answers %v): the faults made no unknown outcome to resend", seen)
	}
	checkCountedOnce(t, s, ids, acked, unknown)
}

// TestIncrementResentWhenItsAnswerIsLostCountsOnce loses every third answer of the functions on its
// way back to the client, after the increment was applied: the client sees a transport error and
// resends with the same key; the functions replay the first answer.
func TestIncrementResentWhenItsAnswerIsLostCountsOnce(t *testing.T) {
	const clients, perClient = 4, 15
	s := startStack(t)
	w := &watched{lose: func(n int64) bool { return n%3 == 0 }}
	c := newStackClient(t, s, w)
	id := testenv.UniqueID("client-lost")
	acked, unknown := incrementConcurrently(t, c, []string{id}, clients, perClient)
	seen := w.seen()
	t.Logf("%d increments acknowledged, %d unknown; answers %v (-1: lost)", acked, unknown, seen)
	if seen[-1] == 0 {
		t.Fatal("no answer was lost")
	}
	if acked != clients*perClient {
		t.Errorf("%d of %d increments acknowledged", acked, clients*perClient)
	}
	checkCountedOnce(t, s, []string{id}, acked, unknown)
}

// TestIncrementWaitsRetryAfterAndCountsOnce makes Firestore slow (a second per chunk each way):
// an increment queued behind its counter's group write in flight waits longer than REQUEST_TIMEOUT,
// and the function answers 503 with Retry-After (its commit was never sent). The faults end as that
// answer reaches the client, which sends the increment again no sooner than Retry-After says; it
// counts once.
func TestIncrementWaitsRetryAfterAndCountsOnce(t *testing.T) {
	s := startStack(t, "REQUEST_TIMEOUT=500ms")
	var mu sync.Mutex
	var answers []string // status and Retry-After of each answer, with when it came
	var at []time.Time
	w := &watched{onAnswer: func(r *http.Response) {
		mu.Lock()
		defer mu.Unlock()
		answers = append(answers, fmt.Sprintf("%d Retry-After %q", r.StatusCode, r.Header.Get("Retry-After")))
		at = append(at, time.Now())
		if r.StatusCode == http.StatusServiceUnavailable {
			s.proxy.SetFaults(faultproxy.Faults{})
		}
	}}
	c := newStackClient(t, s, w)
	first := newStackClient(t, s, &watched{})
	ctx := context.Background()
	id := testenv.UniqueID("client-503")
	if _, err := first.Increment(ctx, client.Increment{Counter: id}); err != nil { // the counter, cached by the instance
		t.Fatal(err)
	}
	s.proxy.SetFaults(faultproxy.Faults{Delay: time.Second})
	inFlight := make(chan error, 1)
	go func() {
		_, err := first.Increment(ctx, client.Increment{Counter: id, Delta: 2})
		inFlight <- err
	}()
	time.Sleep(200 * time.Millisecond) // its group write is on its way
	got, err := c.Increment(ctx, client.Increment{Counter: id, Delta: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-inFlight; err != nil {
		t.Fatalf("the increment in flight: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("answers %q; increment answered %+v", answers, got)
	var wait int
	if len(answers) != 2 || !strings.HasPrefix(answers[1], "200") {
		t.Fatalf("answers %q, want a 503 with Retry-After, then 200", answers)
	}
	if _, err := fmt.Sscanf(answers[0], "503 Retry-After %q", new(string)); err != nil {
		t.Fatalf("first answer %q, want a 503 with Retry-After", answers[0])
	}
	fmt.Sscanf(strings.Trim(strings.TrimPrefix(answers[0], "503 Retry-After "), `"`), "%d", &wait)
	if wait < 1 || wait > 3 {
		t.Fatalf("first answer %q, want Retry-After from 1 to 3 s", answers[0])
	}
	// The resend left no sooner than Retry-After after the 503 arrived, so its answer came later still.
	if gap := at[1].Sub(at[0]); gap < time.Duration(wait)*time.Second {
		t.Errorf("the resend was answered %s after the 503: sooner than its Retry-After (%d s)", gap, wait)
	}
	if n := s.sum(t, id); n != 1+2+7 {
		t.Errorf("counter = %d, want %d", n, 1+2+7)
	}
}

// TestRefusalsAreTypedErrors: the functions' 4xx answers reach the caller as *client.Error with the
// API's message and field, sent once.
func TestRefusalsAreTypedErrors(t *testing.T) {
	s := startStack(t)
	w := &watched{}
	c := newStackClient(t, s, w)
	ctx := context.Background()
	_, err := c.Increment(ctx, client.Increment{Counter: testenv.UniqueID("client-400"), Delta: config.Default().MaxDelta + 1})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || apiErr.Field != "delta" || !strings.Contains(apiErr.Message, "delta") {
		t.Errorf("increment past MAX_DELTA: %v, want a 400 on delta", err)
	}
	_, err = c.Count(ctx, testenv.UniqueID("client-404"))
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound || apiErr.Field != "counter" || !strings.Contains(apiErr.Message, "no such counter") {
		t.Errorf("count of an unknown counter: %v, want a 404 on counter", err)
	}
	if seen := w.seen(); seen[400] != 1 || seen[404] != 1 || len(seen) != 2 {
		t.Errorf("answers %v, want one 400 and one 404: refusals are not sent again", seen)
	}
}

// TestTypedAnswersMatchTheFunctions drives the local stack's own functions (with its roll-ups) through
// every call and decodes each answer the functions sent into the client's type, refusing fields the
// type lacks, so the types follow the functions' JSON.
func TestTypedAnswersMatchTheFunctions(t *testing.T) {
	env := testenv.Stack(t)
	var mu sync.Mutex
	var strictErrs []string
	types := map[string]func() any{
		"/Increment":        func() any { return new(client.Incremented) },
		"/Count":            func() any { return new(client.Counted) },
		"/Count?window":     func() any { return new(client.WindowCounted) },
		"/Top":              func() any { return new(client.TopList) },
		"/ConfigureCounter": func() any { return new(client.Configuration) },
	}
	w := &watched{onAnswer: func(r *http.Response) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		kind := r.Request.URL.Path
		if r.Request.URL.Query().Has("window") {
			kind += "?window"
		}
		newType, ok := types[kind]
		if !ok || r.StatusCode >= 300 || (kind == "/ConfigureCounter" && r.Request.Method != http.MethodPut) {
			return
		}
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(newType()); err != nil {
			mu.Lock()
			strictErrs = append(strictErrs, fmt.Sprintf("%s %s: %v", r.Request.Method, kind, err))
			mu.Unlock()
		}
	}}
	w.base = http.DefaultTransport
	c, err := client.New(context.Background(), option.WithEndpoint(env.FunctionsURL), option.WithHTTPClient(&http.Client{Transport: w}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, group := testenv.UniqueID("client-typed"), testenv.UniqueID("group")
	day, yes := []string{"day"}, true
	cfg, err := c.ConfigureCounter(ctx, client.Settings{Counter: id, Windows: &day, Group: &group})
	if err != nil || !cfg.Created || cfg.Group != group || len(cfg.Windows) != 1 {
		t.Fatalf("configure: %+v, %v", cfg, err)
	}
	if inc, err := c.Increment(ctx, client.Increment{Counter: id, Delta: 3}); err != nil || inc.Delta != 3 || inc.Shard < 0 || inc.Key == "" || inc.ReceivedAt == nil {
		t.Fatalf("increment: %+v, %v", inc, err)
	}
	members := testenv.UniqueID("client-members")
	if _, err := c.ConfigureCounter(ctx, client.Settings{Counter: members, Distinct: &yes}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.Increment(ctx, client.Increment{Counter: members, Member: "ada"}); err != nil {
			t.Fatal(err)
		}
	}
	var top *client.TopList
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if top, err = c.Top(ctx, client.TopQuery{Group: group, Limit: 5}); err != nil {
			t.Fatal(err)
		}
		if len(top.Top) == 1 && top.Top[0].Count == 3 || time.Now().After(deadline) {
			break
		}
	}
	if len(top.Top) != 1 || top.Top[0] != (client.TopEntry{Counter: id, Count: 3}) || top.UpdatedAt == nil || top.Window != "all" {
		t.Errorf("top: %+v", top)
	}
	var count *client.Counted
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if count, err = c.Count(ctx, id); err != nil || count.Rollup != nil && count.Rollup.Count == 3 || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || count.Count != 3 || count.Rollup == nil || count.Rollup.Count != 3 || count.Rollup.UpdatedAt.IsZero() {
		t.Errorf("count: %+v, %v", count, err)
	}
	if n, err := c.Count(ctx, members); err != nil || n.Count != 1 {
		t.Errorf("distinct count: %+v, %v (one member, sent twice)", n, err)
	}
	today, err := c.WindowCount(ctx, id, "day", "")
	if err != nil || today.Count != 3 || today.Bucket != time.Now().UTC().Format("2006-01-02") && today.Bucket != time.Now().UTC().Add(-time.Minute).Format("2006-01-02") {
		t.Errorf("window count: %+v, %v", today, err)
	}
	if discarded, err := c.ResetCounter(ctx, id); err != nil || discarded != 3 {
		t.Errorf("reset: discarded %d, %v; want 3", discarded, err)
	}
	if err := c.DeleteCounter(ctx, id); err != nil {
		t.Errorf("delete: %v", err)
	}
	var apiErr *client.Error
	if _, err := c.Count(ctx, id); !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Errorf("count after delete: %v, want 404", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range strictErrs {
		t.Errorf("an answer has a field its client type lacks: %s", e)
	}
}
