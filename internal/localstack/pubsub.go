package localstack

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/publisher"
)

// Push subscription settings. Each subscription's ack deadline, which Push also takes as its request
// timeout (as Pub/Sub push does), is its function's timeout, at most Pub/Sub's 600 s, as
// terraform/pubsub.tf sets its own subscription's.
const (
	pushMaxAckDeadline = 600 * time.Second
	pushMinBackoff     = time.Second
	pushMaxBackoff     = 10 * time.Second
)

// pushAckDeadline is the ack deadline of f's push subscription: its timeout, in whole seconds
// within Pub/Sub's 10 to 600.
func pushAckDeadline(f manifest.Function) time.Duration {
	return min(max(f.Timeout.Truncate(time.Second), 10*time.Second), pushMaxAckDeadline)
}

// pubsubFunctions are the deployed functions with a Pub/Sub trigger.
func pubsubFunctions() []manifest.Function {
	var fs []manifest.Function
	for _, f := range manifest.Deployed() {
		if f.Trigger.Topic != "" {
			fs = append(fs, f)
		}
	}
	return fs
}

// TopicName is the full name of topic in project.
func TopicName(project, topic string) string { return "projects/" + project + "/topics/" + topic }

// PushEndpoint is where topicName's push subscription reaches entryPoint: /<entryPoint>/<topicName>,
// whence the function reads the event's source.
func PushEndpoint(functionsURL, entryPoint, topicName string) string {
	return functionsURL + "/" + entryPoint + "/" + topicName
}

// RegisterPushPaths also serves each Pub/Sub-triggered function under /<EntryPoint>/, so it answers
// at its PushEndpoint (local only). Call it before starting the framework's server.
func RegisterPushPaths(ctx context.Context) error {
	for _, f := range pubsubFunctions() {
		h, ok := functions.Handler(f.EntryPoint)
		if !ok {
			continue // not implemented yet: nothing to serve
		}
		if err := funcframework.RegisterHTTPFunctionContext(ctx, "/"+f.EntryPoint+"/", h); err != nil {
			return fmt.Errorf("serve %s at its push path: %w", f.EntryPoint, err)
		}
	}
	return nil
}

// wirePubSub creates each Pub/Sub trigger's topic and a subscription "<EntryPoint>-push" (its ack
// deadline pushAckDeadline, also on one that exists) that Push delivers with the deployed
// concurrency times the instances (capped at MaxInstances) in flight. stop ends the deliveries.
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
	for _, f := range pubsubFunctions() {
		topic := TopicName(s.Options.Project, f.Trigger.Topic)
		_, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic})
		if err != nil && status.Code(err) != codes.AlreadyExists {
			stop()
			return nil, fmt.Errorf("create topic %s: %w", topic, err)
		}
		sub := &pubsubpb.Subscription{
			Name:               "projects/" + s.Options.Project + "/subscriptions/" + f.EntryPoint + "-push",
			Topic:              topic,
			AckDeadlineSeconds: int32(pushAckDeadline(f) / time.Second),
			RetryPolicy: &pubsubpb.RetryPolicy{
				MinimumBackoff: durationpb.New(pushMinBackoff),
				MaximumBackoff: durationpb.New(pushMaxBackoff),
			},
		}
		_, err = client.SubscriptionAdminClient.CreateSubscription(ctx, sub)
		if status.Code(err) == codes.AlreadyExists { // an attached emulator's, perhaps of an older stack
			_, err = client.SubscriptionAdminClient.UpdateSubscription(ctx, &pubsubpb.UpdateSubscriptionRequest{
				Subscription: sub, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"ack_deadline_seconds"}}})
		}
		if err != nil {
			stop()
			return nil, fmt.Errorf("create subscription %s: %w", sub.Name, err)
		}
		inFlight := f.Concurrency * min(f.MaxInstances, len(s.functions))
		endpoint := PushEndpoint(s.FunctionsURL, f.EntryPoint, topic)
		deliveries.Go(func() {
			answered := func(took time.Duration, acked bool) { s.Events.pushed(f.EntryPoint, took, acked) }
			if err := Push(ctx, client, sub.Name, endpoint, inFlight, answered); err != nil {
				fmt.Fprintf(out, "localstack: %v\n", err)
			}
		})
	}
	return stop, nil
}
