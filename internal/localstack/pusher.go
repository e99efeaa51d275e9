package localstack

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/shardcount/counters/functions/eventhttp"
)

// Push delivers the pull subscription's (full name) messages to endpoint in push envelopes, up to
// inFlight at once, until ctx ends: the emulator's own push sends one at a time. A 2xx answer acks a
// message; anything else, or none within the subscription's ack deadline (Pub/Sub push's request
// timeout), redelivers it. answered, if not nil, is told how long each delivery took and whether it
// was acked.
func Push(ctx context.Context, client *pubsub.Client, subscription, endpoint string, inFlight int, answered func(took time.Duration, acked bool)) error {
	config, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: subscription})
	if err != nil {
		return fmt.Errorf("push %s: read its ack deadline: %w", subscription, err)
	}
	timeout := time.Duration(cmp.Or(config.GetAckDeadlineSeconds(), 10)) * time.Second // 0: Pub/Sub's default
	httpClient := &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: inFlight}}
	sub := client.Subscriber(subscription)
	sub.ReceiveSettings.MaxOutstandingMessages = inFlight
	sub.ReceiveSettings.NumGoroutines = 4
	err = sub.Receive(ctx, func(ctx context.Context, m *pubsub.Message) {
		env := eventhttp.PushEnvelope{Subscription: subscription, Message: eventhttp.PubSubMessage{
			Data: m.Data, Attributes: m.Attributes, MessageID: m.ID, PublishTime: m.PublishTime}}
		began := time.Now()
		acked := deliver(context.WithoutCancel(ctx), httpClient, endpoint, env)
		if answered != nil {
			answered(time.Since(began), acked)
		}
		if acked {
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
