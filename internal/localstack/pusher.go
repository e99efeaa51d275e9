package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"cloud.google.com/go/pubsub/v2"

	"github.com/shardcount/counters/functions/eventhttp"
)

// The Pub/Sub emulator's push subscriptions deliver one message at a time per subscription: its
// push loop pulls one message, POSTs it, waits for the answer, then takes the next (PushLoop in the
// emulator's jar). Production push keeps many requests in flight (its push window grows with
// successful deliveries), and a function that shares writes between concurrent messages (group
// commit) needs them. Push delivers a pull subscription of the real emulator as production push
// does: the standard push envelope, many at once, acknowledged on 2xx, redelivered otherwise.

// Push delivers the messages of subscription (a pull subscription, full name) to endpoint with up to
// inFlight requests at once, until ctx ends. A message answered 2xx is acknowledged; any other
// answer, or none, makes the emulator deliver it again.
func Push(ctx context.Context, client *pubsub.Client, subscription, endpoint string, inFlight int) error {
	httpClient := &http.Client{Timeout: pushAckDeadline, Transport: &http.Transport{MaxIdleConnsPerHost: inFlight}}
	sub := client.Subscriber(subscription)
	sub.ReceiveSettings.MaxOutstandingMessages = inFlight
	sub.ReceiveSettings.NumGoroutines = 4
	err := sub.Receive(ctx, func(ctx context.Context, m *pubsub.Message) {
		env := eventhttp.PushEnvelope{Subscription: subscription, Message: eventhttp.PubSubMessage{
			Data: m.Data, Attributes: m.Attributes, MessageID: m.ID, PublishTime: m.PublishTime}}
		// A delivery runs to its answer or its timeout, as production push does: it is never cut
		// short by the receiver's own bookkeeping.
		if deliver(context.WithoutCancel(ctx), httpClient, endpoint, env) {
			m.Ack()
			return
		}
		m.Nack()
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("push %s to %s: %w", subscription, endpoint, err)
	}
	return nil
}

// deliver POSTs one envelope and reports whether it was answered 2xx.
func deliver(ctx context.Context, client *http.Client, endpoint string, env eventhttp.PushEnvelope) bool {
	body, err := json.Marshal(env)
	if err != nil {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode <= 299
}
