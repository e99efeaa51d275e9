package functions_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
)

// postKeyed sends an Increment request with the given Idempotency-Key headers.
func (s *testServer) postKeyed(t testing.TB, body string, keys ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/Increment", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, k := range keys {
		req.Header.Add(wire.HeaderIdempotencyKey, k)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("answer is not a JSON object: %q", raw)
	}
	return a
}

func TestIncrementWithIdempotencyKeyCountsOnceAndReplaysTheAnswer(t *testing.T) {
	srv := newTestServer(t, config.Default())
	key := uuid.NewString()
	first := srv.postKeyed(t, `{"counter":"likes","delta":5}`, key)
	if first.status != http.StatusOK || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first request: %d %v %s", first.status, first.header, first.raw)
	}
	// The retry may spell the same increment differently; the answer is the first one, shard included.
	for _, body := range []string{`{"counter":"likes","delta":5}`, `{"delta":5,"counter":"likes"}`} {
		again := srv.postKeyed(t, body, key)
		if again.status != http.StatusOK || again.raw != first.raw || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry: %d %q (replayed %q), want the first answer %q", again.status, again.raw, again.header.Get("Idempotent-Replayed"), first.raw)
		}
	}
	// A key is not a counter: another key, or no key, counts again.
	srv.postKeyed(t, `{"counter":"likes","delta":5}`, uuid.NewString())
	srv.increment(t, "likes", 5)
	if got := srv.count(t, "likes"); got != 15 {
		t.Errorf("likes = %d, want 15 (three distinct increments of 5)", got)
	}
}

// TestIncrementIdempotencyKeyReusedForAnotherIncrementIs422: a spent key with another increment is
// refused and changes nothing, and the answer does not tell what the key was first used for.
func TestIncrementIdempotencyKeyReusedForAnotherIncrementIs422(t *testing.T) {
	srv := newTestServer(t, config.Default())
	key := uuid.NewString()
	srv.postKeyed(t, `{"counter":"likes"}`, key)
	for _, body := range []string{`{"counter":"likes","delta":2}`, `{"counter":"views"}`} {
		a := srv.postKeyed(t, body, key)
		msg, _ := a.body["error"].(string)
		if a.status != http.StatusUnprocessableEntity || a.body["field"] != wire.HeaderIdempotencyKey ||
			!bytesContains(msg, "already used", "new key") {
			t.Errorf("%s with a spent key: %d %s; want 422", body, a.status, a.raw)
		}
		// The key is nobody's (no verified callers): whoever guesses it must not learn its first use.
		if strings.Contains(a.raw, "likes") || strings.Contains(a.raw, "add 1") {
			t.Errorf("%s with a spent key: %s tells the first use of an unscoped key", body, a.raw)
		}
	}
	if got := srv.count(t, "likes"); got != 1 {
		t.Errorf("likes = %d, want 1", got)
	}
	if paths := testenv.DocumentPaths(t, srv.client); len(paths) != 3 { // counter, one shard, one record
		t.Errorf("documents %v, want the counter, one shard and one dedupe record (a keyed commit needs no write record)", paths)
	}
}

func TestIncrementConcurrentRetriesOfOneKeyAnswerAlike(t *testing.T) {
	srv := newTestServer(t, config.Default())
	const retries = 20
	key := uuid.NewString()
	answers := make([]answer, retries)
	var wg sync.WaitGroup
	for i := range retries {
		wg.Go(func() { answers[i] = srv.postKeyed(t, `{"counter":"concurrent","delta":3}`, key) })
	}
	wg.Wait()
	replayed := 0
	for i, a := range answers {
		if a.status != http.StatusOK || a.raw != answers[0].raw {
			t.Errorf("answer %d: %d %s, answer 0: %s", i, a.status, a.raw, answers[0].raw)
		}
		if a.header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if replayed != retries-1 {
		t.Errorf("%d answers replayed, want %d", replayed, retries-1)
	}
	if got := srv.count(t, "concurrent"); got != 3 {
		t.Errorf("count %d, want 3", got)
	}
}

// TestIncrementBadIdempotencyKeysChangeNothing: without an ID token a key is a bearer secret, so one
// too short to be random (an order ID, 21 characters) is refused like a malformed one.
func TestIncrementBadIdempotencyKeysChangeNothing(t *testing.T) {
	srv := newTestServer(t, config.Default())
	cases := map[string][]string{
		"an order ID":       {"order-42"},
		"key of 21 chars":   {strings.Repeat("k", 21)},
		"empty key":         {""},
		"key over 1 KiB":    {strings.Repeat("k", wire.MaxIdempotencyKeyBytes+1)},
		"key not UTF-8":     {"caf\xe9"},
		"two keys":          {"a", "b"},
		"two equal keys":    {"a", "a"},
		"empty and a key":   {"", "a"},
		"key of 1025 runes": {strings.Repeat("é", 513)},
	}
	for name, keys := range cases {
		t.Run(name, func(t *testing.T) {
			a := srv.postKeyed(t, `{"counter":"a"}`, keys...)
			if a.status != http.StatusBadRequest || a.body["field"] != wire.HeaderIdempotencyKey {
				t.Errorf("%d %s, want 400 naming %s", a.status, a.raw, wire.HeaderIdempotencyKey)
			}
		})
	}
	if paths := testenv.DocumentPaths(t, srv.client); len(paths) != 0 {
		t.Errorf("bad keys wrote %v", paths)
	}
	if a := srv.postKeyed(t, `{"counter":"a"}`, "order-42"); !strings.Contains(a.raw, "at least 22 characters") {
		t.Errorf("a short key: %s; want the answer to say what length is allowed", a.raw)
	}
	for _, key := range []string{strings.Repeat("k", wire.MaxIdempotencyKeyBytes), strings.Repeat("é", 22)} {
		if a := srv.postKeyed(t, `{"counter":"a"}`, key); a.status != http.StatusOK {
			t.Errorf("a key of %d bytes, %d characters: %d %s", len(key), len([]rune(key)), a.status, a.raw)
		}
	}
}
