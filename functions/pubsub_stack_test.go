package functions_test

// End-to-end tests of IncrementFromPubSub through the local stack of `make test`: messages are
// published to the real Pub/Sub emulator, which pushes them to the functions process (through a
// proxy of the test's own where deliveries are counted or multiplied), which writes to the Firestore
// emulator; values are read back through the Count function.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/publisher"
	"github.com/shardcount/counters/shared"
)

// stackPubSub is the stack's Pub/Sub emulator and functions, seen from a test.
type stackPubSub struct {
	env    testenv.StackEnv
	client *pubsub.Client
	// prefix makes the test's counter IDs, topics and subscriptions its own.
	prefix string
}

func newStackPubSub(t *testing.T) *stackPubSub {
	t.Helper()
	env := testenv.Stack(t)
	client, err := pubsub.NewClient(context.Background(), env.Project)
	if err != nil {
		t.Fatalf("pub/sub client: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return &stackPubSub{env: env, client: client, prefix: strings.ToLower(strings.TrimPrefix(testenv.NewProjectID(), "test-"))}
}

// newTopic creates a topic of the test's own and deletes it when the test ends.
func (s *stackPubSub) newTopic(t *testing.T) string {
	t.Helper()
	name := localstack.TopicName(s.env.Project, "t-"+s.prefix)
	if _, err := s.client.TopicAdminClient.CreateTopic(context.Background(), &pubsubpb.Topic{Name: name}); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	t.Cleanup(func() {
		_ = s.client.TopicAdminClient.DeleteTopic(context.Background(), &pubsubpb.DeleteTopicRequest{Topic: name})
	})
	return name
}

// subscribe creates a push subscription of topic to endpoint, retrying failures after 1 to 5 s, and
// deletes it when the test ends, which stops its deliveries.
func (s *stackPubSub) subscribe(t *testing.T, topic, id, endpoint string) {
	t.Helper()
	name := "projects/" + s.env.Project + "/subscriptions/" + id + "-" + s.prefix
	_, err := s.client.SubscriptionAdminClient.CreateSubscription(context.Background(), &pubsubpb.Subscription{
		Name: name, Topic: topic,
		PushConfig:         &pubsubpb.PushConfig{PushEndpoint: endpoint},
		AckDeadlineSeconds: 60,
		RetryPolicy:        &pubsubpb.RetryPolicy{MinimumBackoff: durationSeconds(1), MaximumBackoff: durationSeconds(5)},
	})
	if err != nil {
		t.Fatalf("create subscription %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = s.client.SubscriptionAdminClient.DeleteSubscription(context.Background(), &pubsubpb.DeleteSubscriptionRequest{Subscription: name})
	})
}

// publish publishes msgs to topic and returns their message IDs, in order.
func (s *stackPubSub) publish(t *testing.T, topic string, msgs []pubsubMessage) []string {
	t.Helper()
	pub := s.client.Publisher(topic)
	defer pub.Stop()
	results := make([]*pubsub.PublishResult, len(msgs))
	for i, m := range msgs {
		results[i] = pub.Publish(context.Background(), &pubsub.Message{Data: m.data, Attributes: m.attrs})
	}
	ids := make([]string, len(msgs))
	for i, r := range results {
		id, err := r.Get(context.Background())
		if err != nil {
			t.Fatalf("publish message %d: %v", i, err)
		}
		ids[i] = id
	}
	return ids
}

// count reads a counter's exact value through the stack's Count function; 0 for an unknown counter.
func (s *stackPubSub) count(t testing.TB, id string) int64 {
	t.Helper()
	resp, err := http.Get(s.env.FunctionsURL + "/" + functions.EntryCount + "?" + url.Values{"counter": {id}}.Encode())
	if err != nil {
		t.Fatalf("count %q: %v", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return 0
	}
	var body struct{ Count int64 }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("count %q: %d %v", id, resp.StatusCode, err)
	}
	return body.Count
}

// logs reads the functions' log entries so far.
func (s *stackPubSub) logs(t testing.TB) []logEntry {
	t.Helper()
	b, err := os.ReadFile(s.env.FunctionsLog)
	if err != nil {
		t.Fatalf("read the functions' log: %v", err)
	}
	return readLogEntries(bytes.NewReader(b))
}

// pushEndpoint is the push URL of topic below base (the functions, or a proxy path in front of them).
func pushEndpoint(base, topic string) string {
	return localstack.PushEndpoint(base, functions.EntryIncrementFromPubSub, topic)
}

// waitFor polls cond until it holds, failing the test with what() after timeout.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not done within %s: %s", timeout, what())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// pushProxy stands between Pub/Sub push subscriptions and the functions. A push to
// /copies/N/<path> is forwarded N times to the functions at <path>, one after the other, or (for every
// third message) all at the same moment. It answers 200, acknowledging the message, only when every
// copy was answered 2xx; otherwise Pub/Sub redelivers.
type pushProxy struct {
	*httptest.Server
	target string
	client *http.Client

	mu           sync.Mutex
	acked        map[string]map[int]int // message ID -> copies per push -> pushes acknowledged
	forwarded    int                    // copies forwarded
	failed       int                    // copies answered other than 2xx
	simultaneous int                    // pushes whose copies were forwarded at the same moment
	statuses     map[string][]int       // message ID -> every status the functions answered
}

func newPushProxy(t *testing.T, target string) *pushProxy {
	t.Helper()
	p := &pushProxy{
		target:   target,
		client:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 60 * time.Second},
		acked:    map[string]map[int]int{},
		statuses: map[string][]int{},
	}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

// copiesURL is the proxy URL that forwards each push n times.
func (p *pushProxy) copiesURL(n int) string { return p.URL + "/copies/" + strconv.Itoa(n) }

func (p *pushProxy) serve(w http.ResponseWriter, r *http.Request) {
	rest, _ := strings.CutPrefix(r.URL.Path, "/copies/")
	nStr, path, _ := strings.Cut(rest, "/")
	n, _ := strconv.Atoi(nStr)
	body, err := io.ReadAll(r.Body)
	if err != nil || n < 1 {
		http.Error(w, "bad push", http.StatusBadRequest)
		return
	}
	var envelope struct {
		Message struct {
			MessageID string `json:"messageId"`
		} `json:"message"`
	}
	_ = json.Unmarshal(body, &envelope)
	id := envelope.Message.MessageID
	seq, _ := strconv.Atoi(id)
	together := n > 1 && seq%3 == 0

	statuses := make([]int, n)
	if together {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { <-start; statuses[i] = p.forward(r, "/"+path, body) })
		}
		close(start)
		wg.Wait()
	} else {
		for i := range n {
			statuses[i] = p.forward(r, "/"+path, body)
		}
	}

	ok := true
	p.mu.Lock()
	p.forwarded += n
	if together {
		p.simultaneous++
	}
	for _, st := range statuses {
		if st < 200 || st > 299 {
			ok = false
			p.failed++
		}
	}
	p.statuses[id] = append(p.statuses[id], statuses...)
	if ok {
		if p.acked[id] == nil {
			p.acked[id] = map[int]int{}
		}
		p.acked[id][n]++
	}
	p.mu.Unlock()
	if !ok {
		http.Error(w, fmt.Sprintf("the function answered %v", statuses), http.StatusBadGateway)
	}
}

// forward sends one copy of a push to the functions and returns the status (0 if none).
func (p *pushProxy) forward(r *http.Request, path string, body []byte) int {
	req, err := http.NewRequest(http.MethodPost, p.target+path, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// ackedBy reports whether every message in ids was acknowledged through each of the copy counts.
func (p *pushProxy) ackedBy(ids []string, copies ...int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		for _, n := range copies {
			if p.acked[id][n] == 0 {
				return false
			}
		}
	}
	return true
}

// progress says how many of ids are acknowledged through each of the copy counts.
func (p *pushProxy) progress(ids []string, copies ...int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	done := 0
	for _, id := range ids {
		all := true
		for _, n := range copies {
			all = all && p.acked[id][n] > 0
		}
		if all {
			done++
		}
	}
	return fmt.Sprintf("%d of %d messages acknowledged (%d copies forwarded, %d failed)", done, len(ids), p.forwarded, p.failed)
}

// TestPubSubEveryMessageDeliveredAtLeastTwiceCountsExactlyOnce publishes 1,000 messages (one in ten a
// batch of three increments) to a topic with two push subscriptions. One delivers each push to the
// function once; the other delivers it twice, for a third of the messages at the same moment. Every
// message thus reaches the function at least three times, partly concurrently, and the totals are exact.
func TestPubSubEveryMessageDeliveredAtLeastTwiceCountsExactlyOnce(t *testing.T) {
	s := newStackPubSub(t)
	proxy := newPushProxy(t, s.env.FunctionsURL)
	topic := s.newTopic(t)
	s.subscribe(t, topic, "once", pushEndpoint(proxy.copiesURL(1), topic))
	s.subscribe(t, topic, "twice", pushEndpoint(proxy.copiesURL(2), topic))

	const messages, counters = 1000, 10
	counterID := func(i int) string { return fmt.Sprintf("%s-dup-%d", s.prefix, i%counters) }
	expected := map[string]int64{}
	msgs := make([]pubsubMessage, messages)
	increments := 0
	for i := range msgs {
		incs := []wire.Increment{{Counter: counterID(i), Delta: int64(1 + i%7)}}
		if i%10 == 0 {
			incs = append(incs, wire.Increment{Counter: counterID(i + 1), Delta: 2}, wire.Increment{Counter: counterID(i), Delta: -1})
		}
		for _, inc := range incs {
			expected[inc.Counter] += inc.Delta
		}
		increments += len(incs)
		msg, err := publisher.Message("", incs...)
		if err != nil {
			t.Fatal(err)
		}
		msgs[i] = pubsubMessage{data: msg.Data}
	}

	start := time.Now()
	ids := s.publish(t, topic, msgs)
	waitFor(t, 8*time.Minute, func() bool { return proxy.ackedBy(ids, 1, 2) }, func() string { return proxy.progress(ids, 1, 2) })
	elapsed := time.Since(start)

	for id, want := range expected {
		if got := s.count(t, id); got != want {
			t.Errorf("%s = %d, want %d", id, got, want)
		}
	}

	// Every answer of the function to a delivery was either the one application or a duplicate.
	dups := byMessageID(s.logs(t), "INFO", logDuplicate)
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	answered, duplicates, fewest := 0, 0, -1
	for _, id := range ids {
		ok := 0
		for _, st := range proxy.statuses[id] {
			if st >= 200 && st <= 299 {
				ok++
			}
		}
		if ok < 3 {
			t.Errorf("message %s reached the function successfully %d times, want at least 3", id, ok)
		}
		if dups[id] != ok-1 {
			t.Errorf("message %s: %d successful deliveries but %d logged duplicates, want %d", id, ok, dups[id], ok-1)
		}
		answered += ok
		duplicates += dups[id]
		if fewest < 0 || ok < fewest {
			fewest = ok
		}
	}
	total := int64(0)
	for _, v := range expected {
		total += v
	}
	t.Logf("published %d messages (%d increments, total %d) to 2 push subscriptions; %d copies forwarded to the function "+
		"(%d answered 2xx, %d not); %d pushes delivered twice at the same moment; every message delivered successfully at least %d times; "+
		"%d deliveries recognised as duplicates; all %d counters exact; %s from first publish to last acknowledgement",
		messages, increments, total, proxy.forwarded, answered, proxy.failed, proxy.simultaneous, fewest, duplicates, len(expected), elapsed.Round(time.Millisecond))
}

// TestPubSubPublisherRetryWithTheSameKeyCountsOnce publishes one keyed increment three times with the
// publisher package to the stack's own counter-increments topic and push subscription, as a publisher
// retrying it would: three message IDs, one key, counted once.
func TestPubSubPublisherRetryWithTheSameKeyCountsOnce(t *testing.T) {
	s := newStackPubSub(t)
	p, err := publisher.New(context.Background(), s.env.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	retried, plain := s.prefix+"-retried", s.prefix+"-plain"
	key := publisher.NewKey()
	var ids []string
	for range 3 {
		id, err := p.Publish(context.Background(), key, wire.Increment{Counter: retried, Delta: 5})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := p.Publish(context.Background(), "", wire.Increment{Counter: plain, Delta: 2}); err != nil {
		t.Fatal(err)
	}
	duplicates := func() int {
		dups := byMessageID(s.logs(t), "INFO", logDuplicate)
		return dups[ids[0]] + dups[ids[1]] + dups[ids[2]]
	}
	waitFor(t, 2*time.Minute, func() bool { return duplicates() == 2 && s.count(t, plain) == 2 },
		func() string {
			return fmt.Sprintf("%d duplicates logged, %s = %d", duplicates(), plain, s.count(t, plain))
		})
	if got := s.count(t, retried); got != 5 {
		t.Errorf("%s = %d after one keyed increment of 5 published three times (messages %v), want 5", retried, got, ids)
	}
}

// TestPubSubPoisonMessagesAreAcknowledgedAndLoggedGoodOnesCounted interleaves every kind of poison
// message with good ones: the good ones are all counted, each poison message is acknowledged on its
// first delivery and logged at ERROR with its message ID, and nothing else is written.
func TestPubSubPoisonMessagesAreAcknowledgedAndLoggedGoodOnesCounted(t *testing.T) {
	s := newStackPubSub(t)
	proxy := newPushProxy(t, s.env.FunctionsURL)
	topic := s.newTopic(t)
	s.subscribe(t, topic, "poison", pushEndpoint(proxy.copiesURL(1), topic))

	poison := poisonMessages(s.prefix)
	if len(poison) < 20 {
		t.Fatalf("%d kinds of poison, want at least 20", len(poison))
	}
	const goodCounters = 5
	goodID := func(i int) string { return fmt.Sprintf("%s-good-%d", s.prefix, i%goodCounters) }
	expected := map[string]int64{}
	var msgs []pubsubMessage
	var isPoison []bool
	for i := range len(poison) + 1 {
		delta := int64(i + 1)
		expected[goodID(i)] += delta
		msgs = append(msgs, pubsubMessage{name: "good", data: fmt.Appendf(nil, `{"counter":%q,"delta":%d}`, goodID(i), delta)})
		isPoison = append(isPoison, false)
		if i < len(poison) {
			msgs = append(msgs, poison[i])
			isPoison = append(isPoison, true)
		}
	}
	ids := s.publish(t, topic, msgs)
	waitFor(t, 3*time.Minute, func() bool { return proxy.ackedBy(ids, 1) }, func() string { return proxy.progress(ids, 1) })

	for id, want := range expected {
		if got := s.count(t, id); got != want {
			t.Errorf("%s = %d, want %d", id, got, want)
		}
	}
	logged := byMessageID(s.logs(t), "ERROR", logPoison)
	proxy.mu.Lock()
	for i, id := range ids {
		if st := proxy.statuses[id]; len(st) != 1 || st[0] != http.StatusOK {
			t.Errorf("%s message %s: the function answered %v, want one 200 (acknowledged on first delivery)", msgs[i].name, id, st)
		}
		if want := map[bool]int{true: 1, false: 0}[isPoison[i]]; logged[id] != want {
			t.Errorf("%s message %s logged %d times as poison at ERROR, want %d", msgs[i].name, id, logged[id], want)
		}
	}
	proxy.mu.Unlock()

	// Nothing else written: the only counters with the test's prefix are the good ones, and no
	// dedupe record exists for a poison message.
	db := s.env.StackFirestore(t)
	cfg := config.Default()
	counters := db.Collection(cfg.Schema().Counters)
	docs, err := counters.Where(firestore.DocumentID, ">=", counters.Doc(s.prefix)).
		Where(firestore.DocumentID, "<", counters.Doc(s.prefix+"\uffff")).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(expected) {
		var names []string
		for _, d := range docs {
			names = append(names, d.Ref.ID)
		}
		t.Errorf("counters with the test's prefix: %v, want only the %d good ones", names, len(expected))
	}
	var poisonIDs []any
	for i, id := range ids {
		if isPoison[i] {
			poisonIDs = append(poisonIDs, id)
		}
	}
	recs, err := db.Collection(cfg.Schema().Dedupe).Where(shared.FieldDedupeKey, "in", poisonIDs).Documents(context.Background()).GetAll()
	if err != nil || len(recs) != 0 {
		t.Errorf("%d dedupe records of poison messages (%v), want none", len(recs), err)
	}
	t.Logf("%d kinds of poison interleaved with %d good messages: all acknowledged on first delivery, poison logged at ERROR, good counted",
		len(poison), len(msgs)-len(poison))
}

func durationSeconds(n int64) *durationpb.Duration {
	return durationpb.New(time.Duration(n) * time.Second)
}
