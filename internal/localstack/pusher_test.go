package localstack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/publisher"
	"github.com/shardcount/counters/rollup"
)

// TestPushWaitsAsLongAsEachFunctionRuns: each push subscription's ack deadline, Push's request
// timeout, is its function's timeout, as Eventarc's subscriptions have it. So the scheduled sweep's
// request outlasts the sweep's budget: a long pass saves its place by the budget instead of being
// cut at a minute (then begun again at each tick, it never reached a counter first written after
// the others, issue 45).
func TestPushWaitsAsLongAsEachFunctionRuns(t *testing.T) {
	swept := false
	for _, f := range pubsubFunctions() {
		got := pushAckDeadline(f)
		if got != f.Timeout {
			t.Errorf("%s's push ack deadline %v, want its timeout %v", f.EntryPoint, got, f.Timeout)
		}
		if f.EntryPoint == functions.EntryRollupScheduled {
			swept = true
			if got <= rollup.DefaultSweepBudget {
				t.Errorf("%s's push times out after %v, within the sweep's budget %v", f.EntryPoint, got, rollup.DefaultSweepBudget)
			}
		}
	}
	if !swept {
		t.Errorf("no Pub/Sub function %s", functions.EntryRollupScheduled)
	}
}

// TestPushTimesOutAtTheAckDeadline: a delivery unanswered at the subscription's ack deadline (10 s
// here) is cut, counted as not acked, and delivered again, as Pub/Sub push does.
func TestPushTimesOutAtTheAckDeadline(t *testing.T) {
	testenv.SkipIfShort(t, "the Pub/Sub emulator")
	host := os.Getenv("PUBSUB_EMULATOR_HOST")
	if host == "" {
		t.Fatal("PUBSUB_EMULATOR_HOST is unset: run inside `bin/localstack exec --`")
	}
	ctx := context.Background()
	project := testenv.NewProjectID()
	client, err := pubsub.NewClient(ctx, project, publisher.EmulatorOptions(host)...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	topic := TopicName(project, "slow")
	if _, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	sub := "projects/" + project + "/subscriptions/slow-push"
	if _, err := client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}

	var (
		mu         sync.Mutex
		deliveries int
		answers    []bool
	)
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deliveries++
		first := deliveries == 1
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body) // then a cut connection cancels r's context
		// The first answer comes after the ack deadline.
		if first {
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
		}
	}))
	defer fn.Close()
	pushing, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		done <- Push(pushing, client, sub, fn.URL, 1, func(took time.Duration, acked bool) {
			mu.Lock()
			defer mu.Unlock()
			answers = append(answers, acked)
		})
	}()
	if _, err := client.Publisher(topic).Publish(ctx, &pubsub.Message{Data: []byte("tick")}).Get(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		mu.Lock()
		n, got := len(answers), append([]bool(nil), answers...)
		mu.Unlock()
		if n >= 2 || time.Since(began) > time.Minute {
			stop()
			if err := <-done; err != nil {
				t.Error(err)
			}
			if len(got) != 2 || got[0] || !got[1] {
				t.Errorf("answers %v after %v, want the first cut (not acked) at the 10 s deadline, then one acked", got, time.Since(began))
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
