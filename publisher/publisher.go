// Package publisher publishes counter increments for IncrementFromPubSub; a retry with the same
// key counts once.
package publisher

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/shardcount/counters/shared/wire"

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

// New publishes to topic of project (shared.TopicIncrements when empty).
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

// Publish publishes incs (up to wire.MaxBatchIncrements, all or nothing) with key (optional) and
// returns the message ID. Retry failures with the same key.
func (p *Publisher) Publish(ctx context.Context, key string, incs ...wire.Increment) (messageID string, err error) {
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

// Close flushes and closes.
func (p *Publisher) Close() error {
	p.pub.Stop()
	return p.client.Close()
}

// Message is the validated message carrying incs and key.
func Message(key string, incs ...wire.Increment) (*pubsub.Message, error) {
	for _, inc := range incs {
		if err := wire.ValidateIncrement(inc, wire.MaxDeltaLimit); err != nil {
			return nil, fmt.Errorf("increment %+v: %w", inc, err)
		}
	}
	data, err := wire.EncodeIncrementMessage(incs)
	if err != nil {
		return nil, err
	}
	msg := &pubsub.Message{Data: data}
	if key != "" {
		if err := wire.ValidateIdempotencyKey(key, wire.AttributeIdempotencyKey); err != nil {
			return nil, err
		}
		msg.Attributes = map[string]string{wire.AttributeIdempotencyKey: key}
	}
	return msg, nil
}

// NewKey returns a random idempotency key, one per logical increment.
func NewKey() string {
	return rand.Text()
}

// EmulatorOptions are client options for the Pub/Sub emulator at hostPort.
func EmulatorOptions(hostPort string) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(hostPort),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		option.WithoutAuthentication(),
		option.WithTelemetryDisabled(),
	}
}
