package localstack

import (
	"context"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/publisher"
	"github.com/shardcount/counters/shared"
)

// Push subscription settings of the local stack. A failed delivery is retried after 1 s, then with
// backoff up to 10 s, so a message that failed for a transient reason arrives soon without a retry
// storm. The ack deadline is well above REQUEST_TIMEOUT: a slow answer is still an ack.
const (
	pushAckDeadline = 60 * time.Second
	pushMinBackoff  = time.Second
	pushMaxBackoff  = 10 * time.Second
)

// pubsubTriggers are the Pub/Sub-triggered entry points.
func pubsubTriggers() []functions.Trigger {
	var ts []functions.Trigger
	for _, t := range functions.Triggers(shared.DefaultConfig().Schema) {
		if t.EventType == functions.EventPubSubMessagePublished {
			ts = append(ts, t)
		}
	}
	return ts
}

// TopicName is the full name of topic in project.
func TopicName(project, topic string) string { return "projects/" + project + "/topics/" + topic }

// PushEndpoint is where a push subscription of topicName delivers to entryPoint: the function's path,
// then the topic's name. The function turns a push envelope into a messagePublished CloudEvent whose
// source it reads from the projects/P/topics/T part of the path; RegisterPushPaths makes the function
// answer there.
func PushEndpoint(functionsURL, entryPoint, topicName string) string {
	return functionsURL + "/" + entryPoint + "/" + topicName
}

// RegisterPushPaths also serves every registered Pub/Sub-triggered function at the subtree
// /<EntryPoint>/, so that it answers at its PushEndpoint. With FUNCTION_TARGET unset the Functions
// Framework serves a function at exactly /<EntryPoint>, where a push would get an empty topic in the
// event source; a push to /<EntryPoint>/projects/P/topics/T would get 404. Cloud Run and Cloud
// Functions deliver to the one function of the service, so production needs none of this. Call it
// before starting the framework's server.
func RegisterPushPaths(ctx context.Context) error {
	for _, t := range pubsubTriggers() {
		h, ok := functions.Handler(t.EntryPoint)
		if !ok {
			continue // not implemented yet: nothing to serve
		}
		if err := funcframework.RegisterHTTPFunctionContext(ctx, "/"+t.EntryPoint+"/", h); err != nil {
			return fmt.Errorf("serve %s at its push path: %w", t.EntryPoint, err)
		}
	}
	return nil
}

// wirePubSub creates, in the Pub/Sub emulator, the topic of every Pub/Sub trigger and, for each one
// whose function is registered, a push subscription "<EntryPoint>-push" that delivers the topic to it,
// as Eventarc does in production.
func (s *Stack) wirePubSub(ctx context.Context) error {
	client, err := pubsub.NewClient(ctx, s.Options.Project, publisher.EmulatorOptions(s.Emulators.PubSub.HostPort)...)
	if err != nil {
		return fmt.Errorf("pub/sub emulator client: %w", err)
	}
	defer client.Close()
	for _, t := range pubsubTriggers() {
		topic := TopicName(s.Options.Project, t.Topic)
		_, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic})
		if err != nil && status.Code(err) != codes.AlreadyExists {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
		if !slices.Contains(functions.EntryPoints, t.EntryPoint) {
			continue
		}
		sub := &pubsubpb.Subscription{
			Name:               "projects/" + s.Options.Project + "/subscriptions/" + t.EntryPoint + "-push",
			Topic:              topic,
			PushConfig:         &pubsubpb.PushConfig{PushEndpoint: PushEndpoint(s.FunctionsURL, t.EntryPoint, topic)},
			AckDeadlineSeconds: int32(pushAckDeadline / time.Second),
			RetryPolicy: &pubsubpb.RetryPolicy{
				MinimumBackoff: durationpb.New(pushMinBackoff),
				MaximumBackoff: durationpb.New(pushMaxBackoff),
			},
		}
		if _, err := client.SubscriptionAdminClient.CreateSubscription(ctx, sub); err != nil && status.Code(err) != codes.AlreadyExists {
			return fmt.Errorf("create push subscription %s: %w", sub.Name, err)
		}
	}
	return nil
}
