// Package publisher publishes counter increments to the counter-increments topic, where
// IncrementFromPubSub applies each message exactly once. A publisher that retries a failed publish
// sends the same idempotency key again, so the retry counts once even though Pub/Sub gives it a new
// message ID:
//
//	p, err := publisher.New(ctx, "my-project", "")
//	key := publisher.NewKey()
//	id, err := p.Publish(ctx, key, shared.Increment{Counter: "likes", Delta: 1})
//	// on error: Publish again with the same key
//
// With PUBSUB_EMULATOR_HOST set it talks to the Pub/Sub emulator.
package publisher

import (
	"context"
	"crypto/rand"
	"fmt"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/shardcount/counters/shared"
)

// Publisher publishes increments to one topic.
type Publisher struct {
	client *pubsub.Client
	pub    *pubsub.Publisher
}

// New connects to Pub/Sub for project and publishes to topic (shared.TopicIncrements when empty).
func New(ctx context.Context, project, topic string, opts ...option.ClientOption) (*Publisher, error) {
	client, err := pubsub.NewClient(ctx, project, opts...)
	if err != nil {
		return nil, fmt.Errorf("pub/sub client for project %q: %w", project, err)
	}
	if topic == "" {
		topic = shared.TopicIncrements
	}
	return &Publisher{client: client, pub: client.Publisher(topic)}, nil
}

// Publish publishes incs (1 to shared.MaxBatchIncrements; several make one all-or-nothing batch) as
// one message, with key as its idempotency key unless key is empty, and returns the message ID once
// Pub/Sub has it. When it fails, publishing again with the same key is safe: the increments count once.
func (p *Publisher) Publish(ctx context.Context, key string, incs ...shared.Increment) (messageID string, err error) {
	msg, err := Message(key, incs...)
	if err != nil {
		return "", err
	}
	id, err := p.pub.Publish(ctx, msg).Get(ctx)
	if err != nil {
		return "", fmt.Errorf("publish to %s: %w", p.pub, err)
	}
	return id, nil
}

// Close flushes what is being published and closes the connection.
func (p *Publisher) Close() error {
	p.pub.Stop()
	return p.client.Close()
}

// Message is the Pub/Sub message that carries incs with idempotency key key (none when empty). The
// increments are validated as IncrementFromPubSub will, except against the server's MAX_DELTA.
func Message(key string, incs ...shared.Increment) (*pubsub.Message, error) {
	for _, inc := range incs {
		if err := shared.ValidateIncrement(inc, shared.MaxDeltaLimit); err != nil {
			return nil, fmt.Errorf("increment %+v: %w", inc, err)
		}
	}
	data, err := shared.EncodeIncrementMessage(incs)
	if err != nil {
		return nil, err
	}
	msg := &pubsub.Message{Data: data}
	if key != "" {
		if err := shared.ValidateIdempotencyKey(key, shared.AttributeIdempotencyKey); err != nil {
			return nil, err
		}
		msg.Attributes = map[string]string{shared.AttributeIdempotencyKey: key}
	}
	return msg, nil
}

// NewKey returns a random idempotency key. Make one per logical increment, before the first attempt
// to publish it, and reuse it for every retry.
func NewKey() string {
	return rand.Text()
}

// EmulatorOptions are the client options that reach the Pub/Sub emulator at hostPort without
// credentials, for programs that do not have PUBSUB_EMULATOR_HOST in their own environment.
func EmulatorOptions(hostPort string) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(hostPort),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		option.WithoutAuthentication(),
		option.WithTelemetryDisabled(),
	}
}
