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

// Push delivers the pull subscription's (full name) messages to endpoint in push envelopes, up to
// inFlight at once, until ctx ends: the emulator's own push sends one at a time. A 2xx answer acks a
// message; anything else redelivers it.
func Push(ctx context.Context, client *pubsub.Client, subscription, endpoint string, inFlight int) error {
	httpClient := &http.Client{Timeout: pushAckDeadline, Transport: &http.Transport{MaxIdleConnsPerHost: inFlight}}
	sub := client.Subscriber(subscription)
	sub.ReceiveSettings.MaxOutstandingMessages = inFlight
	sub.ReceiveSettings.NumGoroutines = 4
	err := sub.Receive(ctx, func(ctx context.Context, m *pubsub.Message) {
		env := eventhttp.PushEnvelope{Subscription: subscription, Message: eventhttp.PubSubMessage{
			Data: m.Data, Attributes: m.Attributes, MessageID: m.ID, PublishTime: m.PublishTime}}
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
