package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/testenv"
)

// stack is the running local stack, with a Firestore client of its project.
type stack struct {
	testenv.StackEnv
	Client *firestore.Client
}

func newStack(t testing.TB) *stack {
	t.Helper()
	env := testenv.Stack(t)
	return &stack{StackEnv: env, Client: env.StackFirestore(t)}
}

// httpClient is shared by the tests; many goroutines reuse its connections.
var httpClient = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64},
}

// increment adds delta to counter id through the stack's Increment function.
func increment(stack *stack, id string, delta int64) error {
	body, _ := json.Marshal(map[string]any{"counter": id, "delta": delta})
	resp, err := httpClient.Post(stack.FunctionsURL+"/Increment", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("increment %s: %s %s", id, resp.Status, msg)
	}
	return nil
}

// countAnswer is Count's answer.
type countAnswer struct {
	Count  int64 `json:"count"`
	Rollup *struct {
		Count     int64     `json:"count"`
		UpdatedAt time.Time `json:"updated_at"`
	} `json:"rollup"`
}

// count reads counter id through the stack's Count function.
func count(t testing.TB, stack *stack, id string) countAnswer {
	t.Helper()
	resp, err := httpClient.Get(stack.FunctionsURL + "/Count?" + url.Values{"counter": {id}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a countAnswer
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("count %s: %s %s", id, resp.Status, msg)
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

// waitFor polls cond every 20 ms until it holds or timeout passes, and returns how long it took.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// eventStats reads the event bridge's counts of Firestore events.
func eventStats(t testing.TB, stack *stack) localstack.BridgeStats {
	t.Helper()
	resp, err := httpClient.Get(stack.EventsStatsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats localstack.BridgeStats
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	return stats
}

// eventsIdle reports whether the event bridge has delivered (or given up on) every event it received.
func eventsIdle(t testing.TB, stack *stack) bool {
	t.Helper()
	stats := eventStats(t, stack)
	return stats.Received == stats.Delivered+stats.Failed
}
