package functions_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/shared"
)

// Environment knobs that scale TestPubSubBurstSharesShardWritesAndCountsOnce into a measurement
// (docs/performance.md): the defaults are what `make test` runs.
const (
	envBurstMessages = "PUBSUB_BURST_MESSAGES"  // messages published (default 2000)
	envBurstCounters = "PUBSUB_BURST_COUNTERS"  // counters they are spread over (default 1)
	envBurstPlain    = "PUBSUB_BURST_PLAIN"     // "true": one plain delivery each, no duplicates or poison
	envBurstInFlight = "PUBSUB_BURST_IN_FLIGHT" // deliveries in flight (default: one instance at its deployed concurrency)
)

// pushConcurrently subscribes to topic and delivers its messages to endpoint with inFlight requests
// at once, as production push does (the emulator's own push sends one at a time; see
// localstack.Push), until the test ends.
func (s *stackPubSub) pushConcurrently(t *testing.T, topic, id, endpoint string, inFlight int) {
	t.Helper()
	name := "projects/" + s.env.Project + "/subscriptions/" + id + "-" + s.prefix
	_, err := s.client.SubscriptionAdminClient.CreateSubscription(context.Background(), &pubsubpb.Subscription{
		Name: name, Topic: topic, AckDeadlineSeconds: 60,
	})
	if err != nil {
		t.Fatalf("create subscription %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- localstack.Push(ctx, s.client, name, endpoint, inFlight, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("push: %v", err)
		}
		_ = s.client.SubscriptionAdminClient.DeleteSubscription(context.Background(), &pubsubpb.DeleteSubscriptionRequest{Subscription: name})
	})
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestPubSubBurstSharesShardWritesAndCountsOnce publishes a burst of messages for one counter in one
// go. Interleaved: a tenth of them published again with the same idempotency_key (a publisher's
// retry), a poison message every 97, and every delivery forwarded to the function twice (a third of
// them at the same moment). The counter ends exact, and the messages shared their shard writes:
// every shard write counts itself in the shard's "writes" field, so their sum is the number of shard
// writes, far below one per message, and no shard took more than one write per second over the
// burst (measured over at least 10 s). With COMMIT_LOG set for the stack, it also reports the
// commits' documents per increment and the hottest shard over 1 s and 10 s windows.
func TestPubSubBurstSharesShardWritesAndCountsOnce(t *testing.T) {
	s := newStackPubSub(t)
	messages := envInt(t, envBurstMessages, 2000)
	counters := envInt(t, envBurstCounters, 1)
	plain := os.Getenv(envBurstPlain) == "true"
	deployed, _ := manifest.DeployedFunction(functions.EntryIncrementFromPubSub)
	inFlight := envInt(t, envBurstInFlight, deployed.Concurrency)
	topic := s.newTopic(t)
	proxy := newPushProxy(t, s.env.FunctionsURL)
	endpoint := pushEndpoint(proxy.copiesURL(2), topic)
	if plain {
		endpoint = pushEndpoint(s.env.FunctionsURL, topic)
	}
	s.pushConcurrently(t, topic, "burst", endpoint, inFlight)
	counterID := func(i int) string { return fmt.Sprintf("%s-burst-%d", s.prefix, i%counters) }

	expected := map[string]int64{}
	var msgs []pubsubMessage
	for i := range messages {
		delta := int64(1 + i%3)
		m := pubsubMessage{name: "good", data: fmt.Appendf(nil, `{"counter":%q,"delta":%d}`, counterID(i), delta)}
		expected[counterID(i)] += delta
		if !plain && i%10 == 0 {
			m.attrs = map[string]string{wire.AttributeIdempotencyKey: fmt.Sprintf("%s-retried-%d", s.prefix, i)}
			msgs = append(msgs, m) // published twice, counted once
		}
		msgs = append(msgs, m)
		if !plain && i%97 == 0 {
			msgs = append(msgs, pubsubMessage{name: "poison", data: fmt.Appendf(nil, `{"counter":%q,"delta":0}`, counterID(i))})
		}
	}

	start := time.Now()
	ids := s.publish(t, topic, msgs)
	published := time.Since(start)
	drained := func() bool {
		if !plain {
			return proxy.ackedBy(ids, 2)
		}
		for id, want := range expected {
			if s.count(t, id) != want {
				return false
			}
		}
		return true
	}
	waitFor(t, 10*time.Minute, drained, func() string { return proxy.progress(ids, 2) })
	elapsed := time.Since(start)

	for id, want := range expected {
		if got := s.count(t, id); got != want {
			t.Errorf("%s = %d, want %d", id, got, want)
		}
	}
	shardWrites, hottest := 0, 0
	db := s.env.StackFirestore(t)
	schema := config.Default().Schema()
	for id := range expected {
		shards, err := schema.ShardsRef(db, id).Documents(context.Background()).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, shard := range shards {
			n, _ := shard.DataAt(shared.FieldWrites)
			w, _ := n.(int64)
			shardWrites += int(w)
			hottest = max(hottest, int(w))
		}
	}
	report := fmt.Sprintf("%d messages (%d published, plain %v, %d in flight) for %d counter(s): drained in %s (publishing took %s), %.0f messages/s; "+
		"%d shard writes = %.3f per message; busiest shard %d writes",
		messages, len(msgs), plain, inFlight, counters, elapsed.Round(time.Millisecond), published.Round(time.Millisecond),
		float64(messages)/elapsed.Seconds(), shardWrites, float64(shardWrites)/float64(messages), hottest)
	if path := os.Getenv(commitlog.EnvPath); path != "" {
		report += "; " + commitFigures(t, path, s.prefix+"-burst-", start, messages)
	}
	t.Log(report)

	// Sharing needs several messages of a counter in flight at once: asserted for the one-counter
	// burst; spread over many counters (a measurement), it is only reported.
	if counters == 1 && (shardWrites == 0 || float64(shardWrites) > 0.25*float64(messages)) {
		t.Errorf("%d shard writes for %d messages: want shared writes, far fewer than one per message", shardWrites, messages)
	}
	if window := max(10*time.Second, elapsed); float64(hottest) > window.Seconds() {
		t.Errorf("a shard took %d writes during a burst of %s: over 1 write/s over %s", hottest, elapsed.Round(time.Millisecond), window)
	}
}

// commitFigures reads the functions' commit log and describes the commits that wrote counters whose
// IDs start with prefix since start: documents per increment, and the most writes one shard took in
// a 1 s and in a 10 s window.
func commitFigures(t *testing.T, path, prefix string, start time.Time, increments int) string {
	t.Helper()
	commits, err := commitlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	shardPrefix := config.Default().Schema().Counters + "/" + prefix
	isOurShard := func(doc string) bool {
		return strings.HasPrefix(doc, shardPrefix) && strings.Contains(doc, "/"+shared.ShardsCollection+"/")
	}
	var docs, nCommits int
	for _, c := range commits {
		if !c.Time.Before(start) && slices.ContainsFunc(c.Docs, isOurShard) {
			nCommits++
			docs += len(c.Docs)
		}
	}
	// hottest is the most writes one of our shards took in any window of the given length.
	hottest := func(window time.Duration) int {
		for _, w := range commitlog.BusiestWindows(commits, start, time.Now(), window) { // busiest first
			if isOurShard(w.Doc) {
				return w.Writes
			}
		}
		return 0
	}
	return fmt.Sprintf("commit log: %d commits, %d documents = %.3f documents per increment; hottest shard %d writes in 1 s, %.1f writes/s over 10 s",
		nCommits, docs, float64(docs)/float64(increments), hottest(time.Second), float64(hottest(10*time.Second))/10)
}
