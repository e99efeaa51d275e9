package localstack

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/shared"
)

// Delivery of Firestore document events, as Eventarc does it in production.
//
// The Firestore emulator can call functions on document writes (--functions_emulator), but its
// Eventarc-style requests are not what Eventarc sends: the body is base64 text, a ce-datacontenttype
// header makes functions-framework-go answer 500, and ce-source says "projects/projects/". It also
// delivers one event at a time and never retries. The event bridge receives those deliveries,
// acknowledges them at once, and delivers each to the function as the binary-mode CloudEvent Eventarc
// sends (Content-Type application/protobuf, the DocumentEventData protobuf as body, subject
// documents/counters/{id}/shards/{n}), with retries, and as many at once as the deployed function
// takes: its concurrency times its max instances, as Eventarc keeps that many in flight before
// Cloud Run answers 429 (Cloud Run scales the function out to its max instances; one local process
// holds what they would).
const (
	bridgeQueue       = 100_000
	bridgeMaxAttempts = 20
	bridgeMaxBackoff  = 2 * time.Second
)

// EventBridge turns the Firestore emulator's event deliveries into production-format CloudEvents.
type EventBridge struct {
	listener net.Listener
	server   *http.Server
	queue    chan queuedEvent
	done     chan struct{}
	client   *http.Client
	log      io.Writer

	// targets maps the trigger IDs registered with the emulator to the function URLs they deliver to.
	mu      sync.Mutex
	targets map[string]string

	received, delivered, failed, attempts, slow atomic.Int64

	// held measures instance time: how many deliveries are in flight since heldSince, and the
	// instance-seconds accumulated before it (guarded by mu).
	concurrency int
	held        int
	heldSince   time.Time
	instanceSec float64
	// answerTimes and lateness are samples (guarded by mu): how long each delivery took the function
	// to answer, and how late each event reached the bridge after its write (the emulator's delay).
	answerTimes, lateness durations
	// deliveries records when each event was written, received and delivered (GET /deliveries).
	deliveries deliveryLog
}

// queuedEvent is an event waiting for delivery, and its record in the delivery log.
type queuedEvent struct {
	req *http.Request
	seq uint64
}

// SlowAnswer is the answer time beyond which a delivery counts in BridgeStats.SlowAnswers: a
// roll-up trigger event that carries out no roll-up is answered well within it.
const SlowAnswer = 100 * time.Millisecond

// durations counts durations in buckets that grow by a tenth, from 100 µs up: adding one is O(1)
// and a percentile, which /stats computes on every poll, reads about 200 counters, however many
// events a run delivers. A percentile is its bucket's upper bound (at most 10% over).
type durations struct {
	counts []int64
	n      int64
	max    time.Duration
}

const (
	smallestBucket = 100 * time.Microsecond
	bucketGrowth   = 1.1
)

// bucketOf is the bucket holding v: the least i with v <= smallestBucket * bucketGrowth^i.
func bucketOf(v time.Duration) int {
	if v <= smallestBucket {
		return 0
	}
	return int(math.Ceil(math.Log(float64(v)/float64(smallestBucket)) / math.Log(bucketGrowth)))
}

func (d *durations) add(v time.Duration) {
	i := bucketOf(v)
	if i >= len(d.counts) {
		d.counts = append(d.counts, make([]int64, i+1-len(d.counts))...)
	}
	d.counts[i]++
	d.n++
	d.max = max(d.max, v)
}

// percentiles returns the p50, p99 and max of d; zeros when d is empty.
func (d *durations) percentiles() Percentiles {
	if d.n == 0 {
		return Percentiles{}
	}
	at := func(q float64) time.Duration {
		rank, seen := int64(math.Ceil(q*float64(d.n))), int64(0)
		for i, c := range d.counts {
			if seen += c; seen >= rank {
				return min(d.max, time.Duration(float64(smallestBucket)*math.Pow(bucketGrowth, float64(i))))
			}
		}
		return d.max
	}
	return Percentiles{P50: at(0.50), P99: at(0.99), Max: d.max}
}

// Percentiles summarise a sample of durations.
type Percentiles struct {
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// BridgeStats counts the bridge's events.
type BridgeStats struct {
	Received  int64 `json:"received"`
	Delivered int64 `json:"delivered"`
	Failed    int64 `json:"failed"`
	// Invocations is every delivery attempt: the function's invocations, retries included.
	Invocations int64 `json:"invocations"`
	// InstanceSeconds is the instance time the deliveries held, as Cloud Run bills it under
	// request-based billing: at each moment, the deliveries in flight over the function's
	// concurrency, rounded up (the instances it takes to hold them), summed over time.
	InstanceSeconds float64 `json:"instance_seconds"`
	// SlowAnswers counts the deliveries the function answered after more than SlowAnswer.
	SlowAnswers int64 `json:"slow_answers"`
	// AnswerTime is how long the function took to answer a delivery.
	AnswerTime Percentiles `json:"answer_time"`
	// Lateness is how long after its document's write (its update time) an event reached the
	// bridge: the Firestore emulator's own delivery delay.
	Lateness Percentiles `json:"lateness"`
}

// eventsInFlight is how many events Eventarc keeps in flight to the deployed functions with a
// Firestore trigger: each function's concurrency times its max instances.
func eventsInFlight() int {
	n := 0
	for _, f := range functions.Deployed() {
		if f.Trigger.Document != "" {
			n += f.Concurrency * f.MaxInstances
		}
	}
	return max(1, n)
}

// eventConcurrency is the concurrency of the deployed functions with a Firestore trigger (the
// largest, if several).
func eventConcurrency() int {
	c := 1
	for _, f := range functions.Deployed() {
		if f.Trigger.Document != "" {
			c = max(c, f.Concurrency)
		}
	}
	return c
}

// hold counts one more (delta 1) or one fewer (delta -1) delivery in flight now.
func (b *EventBridge) hold(delta int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settleHeld(time.Now())
	b.held += delta
}

// settleHeld adds the instance time held since heldSince. Call with mu held.
func (b *EventBridge) settleHeld(now time.Time) {
	if b.held > 0 {
		instances := (b.held + b.concurrency - 1) / b.concurrency
		b.instanceSec += float64(instances) * now.Sub(b.heldSince).Seconds()
	}
	b.heldSince = now
}

// startEventBridge listens on a free loopback port, the address to give the Firestore emulator as
// --functions_emulator. It also answers GET /stats with BridgeStats, and GET /deliveries?prefix=P
// with the DeliveryRecords of the latest events of documents under P.
// It delivers inFlight events at once.
func startEventBridge(log io.Writer, inFlight int) (*EventBridge, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("event bridge: %w", err)
	}
	b := &EventBridge{
		listener: l,
		queue:    make(chan queuedEvent, bridgeQueue),
		done:     make(chan struct{}),
		client:   &http.Client{Timeout: time.Minute},
		log:      log,
		targets:  make(map[string]string),

		concurrency: eventConcurrency(),
		heldSince:   time.Now(),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /functions/projects/{project}/triggers/{trigger}", b.receive)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(b.Stats())
	})
	mux.HandleFunc("GET /deliveries", b.deliveries.serve)
	b.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = b.server.Serve(l) }()
	for range inFlight {
		go b.work()
	}
	return b, nil
}

// Addr is the bridge's host:port.
func (b *EventBridge) Addr() string { return b.listener.Addr().String() }

// Stats returns the bridge's counts so far.
func (b *EventBridge) Stats() BridgeStats {
	b.mu.Lock()
	b.settleHeld(time.Now())
	held := b.instanceSec
	answer, late := b.answerTimes.percentiles(), b.lateness.percentiles()
	b.mu.Unlock()
	return BridgeStats{Received: b.received.Load(), Delivered: b.delivered.Load(), Failed: b.failed.Load(),
		Invocations: b.attempts.Load(), InstanceSeconds: held, SlowAnswers: b.slow.Load(), AnswerTime: answer, Lateness: late}
}

// receive takes one delivery from the emulator, converts it and queues it for its function.
func (b *EventBridge) receive(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	target, ok := b.targets[r.PathValue("trigger")]
	b.mu.Unlock()
	if !ok {
		http.Error(w, "unknown trigger", http.StatusNotFound)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(raw)))
	if err != nil {
		fmt.Fprintf(b.log, "event bridge: delivery for %s is not base64: %v\n", r.URL.Path, err)
		http.Error(w, "body is not base64", http.StatusBadRequest)
		return
	}
	out, err := http.NewRequest(http.MethodPost, target, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for name, values := range r.Header {
		// In binary mode the data content type travels only as Content-Type.
		if lower := strings.ToLower(name); strings.HasPrefix(lower, "ce-") && lower != "ce-datacontenttype" {
			out.Header[name] = values
		}
	}
	out.Header.Set("Ce-Source", strings.Replace(r.Header.Get("Ce-Source"), "/projects/projects/", "/projects/", 1))
	out.Header.Set("Content-Type", "application/protobuf")
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	b.received.Add(1)
	written, ok, err := eventhttp.WrittenDocumentUpdateTime(body)
	if err == nil && ok {
		b.mu.Lock()
		b.lateness.add(time.Since(written))
		b.mu.Unlock()
	}
	seq := b.deliveries.received(strings.TrimPrefix(r.Header.Get("Ce-Subject"), "documents/"), written)
	b.queue <- queuedEvent{req: out, seq: seq}
	w.WriteHeader(http.StatusNoContent)
}

// work delivers queued events, retrying failures with backoff as Eventarc does for functions
// deployed with retry.
func (b *EventBridge) work() {
	for {
		var q queuedEvent
		select {
		case q = <-b.queue:
			b.deliveries.reached(q.seq)
		case <-b.done:
			return
		}
		req := q.req
		backoff := 50 * time.Millisecond
		for attempt := 1; ; attempt++ {
			err := b.deliver(req)
			if attempt == 1 {
				b.deliveries.answered(q.seq)
			}
			if err == nil {
				b.delivered.Add(1)
				break
			}
			if attempt == bridgeMaxAttempts {
				b.failed.Add(1)
				fmt.Fprintf(b.log, "event bridge: giving up on %s after %d attempts: %v\n", req.Header.Get("Ce-Subject"), attempt, err)
				break
			}
			select {
			case <-time.After(backoff):
			case <-b.done:
				return
			}
			backoff = min(2*backoff, bridgeMaxBackoff)
		}
	}
}

// deliver sends one event; any non-2xx answer is a failure.
func (b *EventBridge) deliver(template *http.Request) error {
	b.attempts.Add(1)
	b.hold(1)
	defer b.hold(-1)
	began := time.Now()
	defer func() {
		took := time.Since(began)
		if took > SlowAnswer {
			b.slow.Add(1)
		}
		b.mu.Lock()
		b.answerTimes.add(took)
		b.mu.Unlock()
	}()
	body, _ := template.GetBody()
	req := template.Clone(context.Background())
	req.Body = body
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", req.URL, resp.Status)
	}
	return nil
}

// registerFirestoreTriggers registers, with the Firestore emulator at firestoreAddr, a trigger for
// every deployed function with a Firestore trigger on the collections of schema, delivering through
// the bridge to functionsURL.
func (b *EventBridge) registerFirestoreTriggers(ctx context.Context, firestoreAddr, project, functionsURL string, schema shared.Schema) error {
	for _, f := range functions.Deployed() {
		t := f.Trigger
		pattern := t.DocumentPattern(schema)
		if pattern == "" {
			continue
		}
		b.mu.Lock()
		b.targets[f.EntryPoint] = functionsURL + "/" + f.EntryPoint
		b.mu.Unlock()
		body, _ := json.Marshal(map[string]any{
			"eventType": t.EventType,
			"database":  "(default)",
			"namespace": "(default)",
			"document":  map[string]string{"value": pattern, "matchType": "PATH_PATTERN"},
		})
		url := fmt.Sprintf("http://%s/emulator/v1/projects/%s/eventarcTrigger?eventarcTriggerId=%s", firestoreAddr, project, f.EntryPoint)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("register %s trigger with the Firestore emulator: %w", f.EntryPoint, err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("register %s trigger with the Firestore emulator: %s: %s", f.EntryPoint, resp.Status, msg)
		}
	}
	return nil
}

// stop stops receiving and abandons undelivered events.
func (b *EventBridge) stop() {
	_ = b.server.Close()
	close(b.done)
}
