package functions_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/functions/config"
)

// TestIncrementAnswersWhenItReceivedTheIncrement: an unkeyed answer carries received_at, taken before
// the write (apps compare it with the roll-up's updated_at).
func TestIncrementAnswersWhenItReceivedTheIncrement(t *testing.T) {
	srv := newTestServer(t, config.Default())
	before := time.Now()
	a := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "seen"})
	after := time.Now()
	received := receivedAt(t, a)
	if a.status != http.StatusOK || received.Before(before) || received.After(after) {
		t.Errorf("answer %d %s: received_at %s not between the request's start %s and its answer %s", a.status, a.raw, received, before, after)
	}
}

// TestKeyedAnswersCarryTheFirstReceivedAt: a keyed answer carries received_at too, taken after the
// first request with the key began and before its write committed (the shard's update time), and
// every later answer for the key repeats the first byte for byte: a plain delta, a member of a
// distinct counter, and a delta under PER_CALLER_LIMIT.
func TestKeyedAnswersCarryTheFirstReceivedAt(t *testing.T) {
	plain := newTestServer(t, config.Default())
	distinct := newTestServer(t, config.Default())
	if a := distinct.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "visitors", "distinct": true}); a.status != http.StatusCreated {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	limited := newCallerServer(t, callerauth.Requirements{IDToken: true}, 1)
	token, _ := authEmulatorUser(t, "keyed.received@example.com")
	deltaKey, memberKey := uuid.NewString(), uuid.NewString()
	cases := []struct {
		name, counter string
		srv           *testServer
		send          func() answer
	}{
		{"delta", "likes", plain, func() answer { return plain.postKeyed(t, `{"counter":"likes","delta":3}`, deltaKey) }},
		{"member", "visitors", distinct, func() answer { return distinct.postKeyed(t, `{"counter":"visitors","member":"ann"}`, memberKey) }},
		{"limited", "photo", limited, func() answer {
			return limited.incrementAs(t, map[string]string{"Authorization": "Bearer " + token, "Idempotency-Key": "k-limited"}, `{"counter":"photo"}`)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := time.Now()
			first := c.send()
			if first.status != http.StatusOK {
				t.Fatalf("first: %d %s", first.status, first.raw)
			}
			received := receivedAt(t, first)
			committed := shardUpdateTime(t, c.srv, c.counter, first)
			if received.Before(before.Truncate(time.Microsecond)) || !received.Before(committed) {
				t.Errorf("first answer %s: received_at %s not after the request's start %s and before the write's commit %s",
					first.raw, received, before, committed)
			}
			again := c.send()
			if again.status != http.StatusOK || again.raw != first.raw || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay: %d %s (replayed %q), want the first answer %s", again.status, again.raw, again.header.Get("Idempotent-Replayed"), first.raw)
			}
		})
	}
}

// TestConcurrentKeyedRequestsAnswerOneReceivedAt: requests with one key sent at once to two
// instances (one write each may race for the key, or share their instance's group write) are all
// answered with the first application's answer, received_at included, and count once.
func TestConcurrentKeyedRequestsAnswerOneReceivedAt(t *testing.T) {
	a := newTestServer(t, config.Default())
	b := newTestServerWithClient(t, config.Default(), a.client)
	const perInstance = 6
	for round := range 3 {
		key := uuid.NewString()
		answers := make([]answer, 2*perInstance)
		var wg sync.WaitGroup
		for i := range answers {
			srv := []*testServer{a, b}[i%2]
			wg.Go(func() { answers[i] = srv.postKeyed(t, `{"counter":"burst","delta":2}`, key) })
		}
		wg.Wait()
		fresh := 0
		for i, ans := range answers {
			if ans.status != http.StatusOK || ans.raw != answers[0].raw {
				t.Errorf("round %d, request %d: %d %s; want every answer equal to %s", round, i, ans.status, ans.raw, answers[0].raw)
			}
			if ans.header.Get("Idempotent-Replayed") != "true" {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("round %d: %d answers not marked replayed, want 1 (the first application)", round, fresh)
		}
		receivedAt(t, answers[0])
	}
	if got := a.count(t, "burst"); got != 6 {
		t.Errorf("burst = %d, want 6 (three keys of 2, each once)", got)
	}
}

// receivedAt is answer a's received_at; it fails t when there is none.
func receivedAt(t *testing.T, a answer) time.Time {
	t.Helper()
	text, _ := a.body["received_at"].(string)
	received, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		t.Fatalf("answer %d %s: no received_at (%v)", a.status, a.raw, err)
	}
	return received
}

// shardUpdateTime is the commit time of the last write of the shard answer a names, in counter id
// of srv.
func shardUpdateTime(t *testing.T, srv *testServer, id string, a answer) time.Time {
	t.Helper()
	shard, ok := a.body["shard"].(float64)
	if !ok || shard < 0 {
		t.Fatalf("answer %s names no shard", a.raw)
	}
	snap, err := config.Default().Schema().ShardRef(srv.client, id, int(shard)).Get(context.Background())
	if err != nil {
		t.Fatalf("read shard %v of %q: %v", shard, id, err)
	}
	return snap.UpdateTime
}
