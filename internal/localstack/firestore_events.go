package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/sources"

	firestoreapi "cloud.google.com/go/firestore/apiv1"
	"cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/counters/shared"
)

// The event bridge delivers the changes the listen stream (listen.go) sees as Eventarc's
// binary-mode CloudEvents, with retries, concurrency times max instances in flight. See
// docs/development.md, "The local stack".
const (
	bridgeQueue       = 100_000
	bridgeMaxAttempts = 20
	bridgeMaxBackoff  = 2 * time.Second
)

// EventBridge delivers the Firestore emulator's document changes to the functions as
// production-format CloudEvents.
type EventBridge struct {
	listener net.Listener
	server   *http.Server
	queue    chan queuedEvent
	done     chan struct{}
	client   *http.Client
	log      io.Writer

	firestore    *firestoreapi.Client // the watches' connection
	watching     context.Context
	stopWatching context.CancelFunc

	copies int // deliveries of each event, under one ID

	mu sync.Mutex

	received, delivered, failed, attempts, slow atomic.Int64

	// Guarded by mu: deliveries held since heldSince, instance-seconds before it.
	concurrency int
	held        int
	heldSince   time.Time
	instanceSec float64
	// Guarded by mu: answer times, and events' delay after their write.
	answerTimes, lateness durations
	// Guarded by mu: discovery queries' durations, and how long after its creation each document
	// created while watched was found.
	discoveryTimes, discoveryLag durations
	discoveries, watched         int64
	// Guarded by mu: Pub/Sub push deliveries by entry point.
	pushes map[string]*pushRecord
	// deliveries serves GET /deliveries.
	deliveries deliveryLog
}

// queuedEvent is an event awaiting delivery and its delivery log sequence number.
type queuedEvent struct {
	req *http.Request
	seq uint64
}

// SlowAnswer is the answer time beyond which a delivery counts in BridgeStats.SlowAnswers.
const SlowAnswer = 100 * time.Millisecond

// durations counts durations in buckets growing by a tenth from 100 µs, so a percentile (its
// bucket's upper bound, at most 10% over) costs the same however many were added.
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

// BridgeStats counts the bridge's events. Invocations counts every attempt; InstanceSeconds sums
// ⌈deliveries in flight / concurrency⌉ over time, as request-based billing does; Lateness is how
// long after its write an event reached the bridge. Discovery times the queries that find new
// documents; Pushes, the stack's Pub/Sub push deliveries by entry point (RollupScheduled's are the
// sweeps).
type BridgeStats struct {
	Received        int64                `json:"received"`
	Delivered       int64                `json:"delivered"`
	Failed          int64                `json:"failed"`
	Invocations     int64                `json:"invocations"`
	InstanceSeconds float64              `json:"instance_seconds"`
	SlowAnswers     int64                `json:"slow_answers"`
	AnswerTime      Percentiles          `json:"answer_time"`
	Lateness        Percentiles          `json:"lateness"`
	Discovery       DiscoveryStats       `json:"discovery"`
	Pushes          map[string]PushStats `json:"pushes,omitempty"`
}

// DiscoveryStats: Queries names-only queries (each over a trigger's whole collection group) took
// QueryTime and found Watched documents; Lag is how long after its creation a document created while
// watched was found (its first event waits as long).
type DiscoveryStats struct {
	Queries   int64       `json:"queries"`
	Watched   int64       `json:"watched"`
	QueryTime Percentiles `json:"query_time"`
	Lag       Percentiles `json:"lag"`
}

// PushStats counts one subscription's push deliveries: answered 2xx (Acked) or not (Nacked: an
// error, a timeout at the ack deadline, or no answer), and how long each took.
type PushStats struct {
	Acked      int64       `json:"acked"`
	Nacked     int64       `json:"nacked"`
	AnswerTime Percentiles `json:"answer_time"`
}

// pushRecord is a PushStats in the making.
type pushRecord struct {
	acked, nacked int64
	times         durations
}

// pushed records a push delivery to entryPoint that took took and was acked or not.
func (b *EventBridge) pushed(entryPoint string, took time.Duration, acked bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pushes == nil {
		b.pushes = make(map[string]*pushRecord)
	}
	r := b.pushes[entryPoint]
	if r == nil {
		r = &pushRecord{}
		b.pushes[entryPoint] = r
	}
	if acked {
		r.acked++
	} else {
		r.nacked++
	}
	r.times.add(took)
}

// discovered records a discovery query that took took and watched documents found lag after their
// creation.
func (b *EventBridge) discovered(took time.Duration, watched int, lag []time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.discoveries++
	b.watched += int64(watched)
	b.discoveryTimes.add(took)
	for _, l := range lag {
		b.discoveryLag.add(l)
	}
}

// EventsInFlight is how many events the local stack's bridge delivers at once.
func EventsInFlight() int { return eventsInFlight() }

// eventsInFlight sums concurrency times max instances over the Firestore-triggered functions.
func eventsInFlight() int {
	n := 0
	for _, f := range manifest.Deployed() {
		if f.Trigger.Document != "" {
			n += f.Concurrency * f.MaxInstances
		}
	}
	return max(1, n)
}

// eventConcurrency is the largest concurrency of the Firestore-triggered functions.
func eventConcurrency() int {
	c := 1
	for _, f := range manifest.Deployed() {
		if f.Trigger.Document != "" {
			c = max(c, f.Concurrency)
		}
	}
	return c
}

// hold adds delta (±1) to the deliveries in flight.
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

// startEventBridge serves GET /stats (BridgeStats) and GET /deliveries on addr (port 0: one the OS
// picks) and delivers inFlight events at once, each copies times.
func startEventBridge(log io.Writer, addr string, inFlight, copies int) (*EventBridge, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("event bridge: %w", err)
	}
	b := &EventBridge{
		listener: l,
		queue:    make(chan queuedEvent, bridgeQueue),
		done:     make(chan struct{}),
		client:   &http.Client{Timeout: time.Minute},
		log:      log,

		concurrency: eventConcurrency(),
		heldSince:   time.Now(),
		copies:      max(1, copies),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(b.Stats())
	})
	mux.HandleFunc("GET /deliveries", b.deliveries.serve)
	b.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	b.watching, b.stopWatching = context.WithCancel(context.Background())
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
	discovery := DiscoveryStats{Queries: b.discoveries, Watched: b.watched,
		QueryTime: b.discoveryTimes.percentiles(), Lag: b.discoveryLag.percentiles()}
	var pushes map[string]PushStats
	for entry, r := range b.pushes {
		if pushes == nil {
			pushes = make(map[string]PushStats)
		}
		pushes[entry] = PushStats{Acked: r.acked, Nacked: r.nacked, AnswerTime: r.times.percentiles()}
	}
	b.mu.Unlock()
	return BridgeStats{Received: b.received.Load(), Delivered: b.delivered.Load(), Failed: b.failed.Load(),
		Invocations: b.attempts.Load(), InstanceSeconds: held, SlowAnswers: b.slow.Load(), AnswerTime: answer, Lateness: late,
		Discovery: discovery, Pushes: pushes}
}

// enqueue queues req (with body) for a write of path, b.copies times; doc is nil for a delete.
func (b *EventBridge) enqueue(req *http.Request, body []byte, path string, doc *firestorepb.Document) {
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	var written time.Time
	if doc != nil {
		written = doc.GetUpdateTime().AsTime()
		b.mu.Lock()
		b.lateness.add(time.Since(written))
		b.mu.Unlock()
	}
	for range max(1, b.copies) {
		b.received.Add(1)
		seq := b.deliveries.received(path, written)
		b.queue <- queuedEvent{req: req, seq: seq}
	}
}

// work delivers queued events, retrying failures with backoff.
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
				b.deliveries.settled(q.seq, attempt)
				b.delivered.Add(1)
				break
			}
			if attempt == bridgeMaxAttempts {
				b.deliveries.settled(q.seq, attempt)
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

// watchFirestoreTriggers watches every Firestore trigger's documents (per-source functions: each of
// counted's patterns) in project's database and delivers their events to functionsURL until the
// bridge stops.
func (b *EventBridge) watchFirestoreTriggers(ctx context.Context, firestoreAddr, project, database, functionsURL string, schema shared.Schema, counted *sources.Set) error {
	client, err := dialFirestore(ctx, firestoreAddr)
	if err != nil {
		return err
	}
	b.firestore = client
	var deployed []manifest.Function
	for _, f := range manifest.Deployed() {
		if f.PerSource {
			deployed = append(deployed, manifest.SourceFunctions(f, counted.Patterns())...)
		} else {
			deployed = append(deployed, f)
		}
	}
	for _, f := range deployed {
		t := f.Trigger
		if pattern := t.DocumentPattern(schema); pattern != "" {
			if err := b.watchTriggerDocuments(b.watching, client, databaseName(project, database), t.EventType, pattern, functionsURL+"/"+f.EntryPoint, f.PerSource); err != nil {
				return fmt.Errorf("watch %s's documents: %w", f.EntryPoint, err)
			}
		}
	}
	return nil
}

// WatchDocuments starts a bridge of its own delivering eventType events of the documents of
// project's default database matching pattern to target, inFlight at once, each copies times, until Stop.
func WatchDocuments(ctx context.Context, log io.Writer, firestoreAddr, project, eventType, pattern, target string, inFlight, copies int) (*EventBridge, error) {
	b, err := startEventBridge(log, "127.0.0.1:0", inFlight, copies)
	if err != nil {
		return nil, err
	}
	if b.firestore, err = dialFirestore(ctx, firestoreAddr); err != nil {
		b.stop()
		return nil, err
	}
	if err := b.watchTriggerDocuments(b.watching, b.firestore, databaseName(project, "(default)"), eventType, pattern, target, true); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// Stop stops a WatchDocuments bridge, abandoning undelivered events.
func (b *EventBridge) Stop() { b.stop() }

// stop stops watching and abandons undelivered events.
func (b *EventBridge) stop() {
	b.stopWatching()
	if b.firestore != nil {
		_ = b.firestore.Close()
	}
	_ = b.server.Close()
	close(b.done)
}
