package localstack

import (
	"context"
	"fmt"
	"io"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/shardcount/counters/publisher"
	"github.com/shardcount/counters/shared"
)

// startScheduler stands in for Cloud Scheduler, publishing a tick to counter-rollup-tick every
// period until the returned function is called.
func (s *Stack) startScheduler(ctx context.Context, period time.Duration, log io.Writer) (stop func(), err error) {
	client, err := pubsub.NewClient(ctx, s.Options.Project, publisher.EmulatorOptions(s.Emulators.PubSub.HostPort)...)
	if err != nil {
		return nil, fmt.Errorf("scheduler: pub/sub emulator client: %w", err)
	}
	ticks := client.Publisher(TopicName(s.Options.Project, shared.TopicRollupTick))
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(period)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-ticker.C:
				// Cloud Scheduler's Pub/Sub target sends the job's payload; ours says when it fired.
				res := ticks.Publish(ctx, &pubsub.Message{Data: []byte(now.UTC().Format(time.RFC3339))})
				if _, err := res.Get(ctx); err != nil && ctx.Err() == nil {
					fmt.Fprintf(log, "localstack: scheduler tick: %v\n", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
		ticks.Stop()
		_ = client.Close()
	}, nil
}
