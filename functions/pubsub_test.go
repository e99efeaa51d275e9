package functions_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// messageEvent is the CloudEvent the Functions Framework makes of a Pub/Sub push of m with message ID id.
func messageEvent(t testing.TB, id string, m pubsubMessage) event.Event {
	t.Helper()
	e := event.New()
	e.SetID(id)
	e.SetType(eventhttp.EventPubSubMessagePublished)
	e.SetSource("//pubsub.googleapis.com/projects/p/topics/" + shared.TopicIncrements)
	attrs := m.attrs
	if attrs == nil {
		attrs = map[string]string{}
	}
	// []byte data is base64 in JSON, as in the push envelope.
	msg := map[string]any{"data": m.data, "attributes": attrs, "messageId": id}
	if !m.published.IsZero() {
		msg["publishTime"] = m.published.Format(time.RFC3339Nano)
		e.SetTime(m.published)
	}
	data := map[string]any{"message": msg}
	if err := e.SetData(event.ApplicationJSON, data); err != nil {
		t.Fatal(err)
	}
	return e
}

// deliver hands one message to IncrementFromPubSub, as Pub/Sub push would.
func (s *testServer) deliver(t testing.TB, id string, m pubsubMessage) error {
	t.Helper()
	return s.svc.IncrementFromPubSub(context.Background(), messageEvent(t, id, m))
}

func TestIncrementFromPubSubCountsEachMessageOnceHoweverOftenDelivered(t *testing.T) {
	srv := newTestServer(t, config.Default())
	single := pubsubMessage{data: []byte(`{"counter":"likes","delta":2}`)}
	batch := pubsubMessage{data: []byte(`{"increments":[{"counter":"likes","delta":3},{"counter":"views"},{"counter":"likes","delta":-1}]}`)}
	// Sequential redeliveries, then concurrent ones.
	for range 3 {
		for id, m := range map[string]pubsubMessage{"1": single, "2": batch} {
			if err := srv.deliver(t, id, m); err != nil {
				t.Fatalf("deliver %s: %v", id, err)
			}
		}
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := srv.deliver(t, "3", single); err != nil {
				t.Errorf("concurrent delivery: %v", err)
			}
		})
	}
	wg.Wait()
	if likes, views := srv.count(t, "likes"), srv.count(t, "views"); likes != 2+2+2 || views != 1 {
		t.Errorf("likes = %d, views = %d; want 6 and 1", likes, views)
	}
	if dups := byMessageID(readLogEntries(strings.NewReader(srv.logs.String())), "INFO", logDuplicate); dups["1"] != 2 || dups["2"] != 2 || dups["3"] != 9 {
		t.Errorf("duplicates logged per message ID %v, want 1:2 2:2 3:9", dups)
	}
}

func TestIncrementFromPubSubIdempotencyKeyOverridesTheMessageID(t *testing.T) {
	srv := newTestServer(t, config.Default())
	m := pubsubMessage{data: []byte(`{"counter":"orders","delta":7}`), attrs: map[string]string{wire.AttributeIdempotencyKey: "order-42"}}
	// A publisher that retries gets a new message ID each time; the key stays.
	for _, id := range []string{"10", "11", "12"} {
		if err := srv.deliver(t, id, m); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.count(t, "orders"); got != 7 {
		t.Errorf("orders = %d after one keyed message published three times, want 7", got)
	}
	// The same key with other increments is poison: acknowledged, logged, not applied.
	reused := pubsubMessage{data: []byte(`{"counter":"orders","delta":1}`), attrs: m.attrs}
	if err := srv.deliver(t, "13", reused); err != nil {
		t.Fatalf("reused key: %v, want it acknowledged", err)
	}
	if got := srv.count(t, "orders"); got != 7 {
		t.Errorf("orders = %d after a reused key, want 7", got)
	}
	if n := byMessageID(readLogEntries(strings.NewReader(srv.logs.String())), "ERROR", logPoison)["13"]; n != 1 {
		t.Errorf("reused key logged %d times at ERROR, want 1:\n%s", n, srv.logs)
	}
}

func TestIncrementFromPubSubAcknowledgesAndLogsPoisonWritingNothing(t *testing.T) {
	srv := newTestServer(t, config.Default())
	poison := poisonMessages("unit")
	for i, m := range poison {
		if err := srv.deliver(t, fmt.Sprint(100+i), m); err != nil {
			t.Errorf("%s: %v, want it acknowledged (nil)", m.name, err)
		}
	}
	logged := byMessageID(readLogEntries(strings.NewReader(srv.logs.String())), "ERROR", logPoison)
	for i, m := range poison {
		if logged[fmt.Sprint(100+i)] != 1 {
			t.Errorf("%s (message %d) not logged once at ERROR", m.name, 100+i)
		}
	}
	for _, e := range readLogEntries(strings.NewReader(srv.logs.String())) {
		if e["severity"] == "ERROR" && (e["reason"] == "" || e["reason"] == nil) {
			t.Errorf("poison logged without a reason: %v", e)
		}
	}
	if paths := testenv.DocumentPaths(t, srv.client); len(paths) != 0 {
		t.Errorf("poison messages wrote %v", paths)
	}
}

// TestIncrementFromPubSubTransientFailureAsksForRedelivery: with the database unreachable the function
// fails, so that Pub/Sub redelivers, and logs a WARNING, not a poison ERROR.
func TestIncrementFromPubSubTransientFailureAsksForRedelivery(t *testing.T) {
	testenv.FirestoreEmulatorHost(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	t.Setenv("FIRESTORE_EMULATOR_HOST", dead) // connections are refused: Unavailable
	cfg := config.Default()
	cfg.RequestTimeout = 500 * time.Millisecond
	srv := newTestServerWithClient(t, cfg, testenv.Firestore(t))
	err = srv.deliver(t, "1", pubsubMessage{data: []byte(`{"counter":"likes"}`)})
	if err == nil || !shared.IsRetryable(err) {
		t.Fatalf("deliver with the database down = %v, want a retryable error", err)
	}
	logs := srv.logs.String()
	if !bytesContains(logs, `"severity":"WARNING"`, `"message_id":"1"`) || strings.Contains(logs, logPoison) {
		t.Errorf("want one WARNING naming the message and no poison ERROR:\n%s", logs)
	}
}
