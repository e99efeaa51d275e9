package localstack

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
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

// PushInFlight is how many deliveries of increments each functions instance gets at once: the
// concurrency IncrementFromPubSub is deployed with (scripts/deploy.sh FUNCTION_SETTINGS), which
// production push fills (its push window grows with successful deliveries). Other Pub/Sub functions
// (the scheduler tick) get one at a time.
const PushInFlight = 1000

// wirePubSub creates, in the Pub/Sub emulator, the topic of every Pub/Sub trigger and, for each one
// whose function is registered, a subscription "<EntryPoint>-push" that Push delivers to the function
// as production push does, many at once (the emulator's own push subscriptions deliver one message at
// a time). It returns the function that stops the deliveries.
func (s *Stack) wirePubSub(ctx context.Context, out io.Writer) (stop func(), err error) {
	client, err := pubsub.NewClient(ctx, s.Options.Project, publisher.EmulatorOptions(s.Emulators.PubSub.HostPort)...)
	if err != nil {
		return nil, fmt.Errorf("pub/sub emulator client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var deliveries sync.WaitGroup
	stop = func() {
		cancel()
		deliveries.Wait()
		client.Close()
	}
	for _, t := range pubsubTriggers() {
		topic := TopicName(s.Options.Project, t.Topic)
		_, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic})
		if err != nil && status.Code(err) != codes.AlreadyExists {
			stop()
			return nil, fmt.Errorf("create topic %s: %w", topic, err)
		}
		if !slices.Contains(functions.EntryPoints, t.EntryPoint) {
			continue
		}
		sub := &pubsubpb.Subscription{
			Name:               "projects/" + s.Options.Project + "/subscriptions/" + t.EntryPoint + "-push",
			Topic:              topic,
			AckDeadlineSeconds: int32(pushAckDeadline / time.Second),
			RetryPolicy: &pubsubpb.RetryPolicy{
				MinimumBackoff: durationpb.New(pushMinBackoff),
				MaximumBackoff: durationpb.New(pushMaxBackoff),
			},
		}
		if _, err := client.SubscriptionAdminClient.CreateSubscription(ctx, sub); err != nil && status.Code(err) != codes.AlreadyExists {
			stop()
			return nil, fmt.Errorf("create subscription %s: %w", sub.Name, err)
		}
		inFlight := 1
		if t.EntryPoint == functions.EntryIncrementFromPubSub {
			inFlight = PushInFlight * len(s.functions)
		}
		endpoint := PushEndpoint(s.FunctionsURL, t.EntryPoint, topic)
		deliveries.Go(func() {
			if err := Push(ctx, client, sub.Name, endpoint, inFlight); err != nil {
				fmt.Fprintf(out, "localstack: %v\n", err)
			}
		})
	}
	return stop, nil
}
