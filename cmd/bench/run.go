package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"sync"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/loadreport"
	"github.com/shardcount/counters/shared"
)

// options are the harness's flags that apply to every run.
type options struct {
	clients  int
	duration time.Duration
	// counters and zipf are the run's spread (a plan's, when it has one).
	spread
	shards int
	// windows, when not empty, are the windows every counter counts in (ConfigureCounter's windows).
	windows       []string
	rate          float64
	groupInterval string
	killAt        time.Duration
	localstack    string
	// keyedFraction of the HTTP clients send an Idempotency-Key and retry unknown outcomes with it.
	keyedFraction float64
	// messages is the Pub/Sub burst: how many increments are published.
	messages int
	// republishFraction of published messages are published once more with the same key, as a
	// publisher whose acknowledgement was lost does.
	republishFraction float64
	// drainTimeout bounds the wait for Pub/Sub increments to be counted.
	drainTimeout time.Duration
	// parents, likers and copies shape runs of document changes (-via documents): the posts whose
	// likes change, the possible likers of each, and how many times each event is delivered.
	parents, likers, copies int
	// writeTimeInFlight is how many events the write-time aggregation's bridge delivers at once.
	writeTimeInFlight int
}

// spread is how a run's increments spread over its counters.
type spread struct {
	counters int
	// zipf, when more than 1, is the exponent of the Zipf distribution of increments over counters;
	// 0 spreads them evenly.
	zipf float64
}

// plan is one run: how increments arrive, the functions' mode, how many instances, which faults,
// over how many counters.
type plan struct {
	via       string
	mode      string
	instances int
	// faults is nil for no fault proxy; "none" is a proxy that injects nothing.
	faults *faultSpec
	// spread replaces the options' when its counters is not 0.
	spread spread
}

// name is the run's column title in the report.
func (p plan) name() string {
	n := fmt.Sprintf("%s %s K=%d", p.via, p.mode, p.instances)
	if p.faults != nil {
		n += " faults=" + p.faults.text
	}
	if p.spread.counters > 1 {
		n += fmt.Sprintf(" counters=%d", p.spread.counters)
		if p.spread.zipf > 0 {
			n += fmt.Sprintf(" zipf=%g", p.spread.zipf)
		}
	}
	return n
}

// modeEnv is the functions' environment of each mode.
func modeEnv(o options, mode string) ([]string, error) {
	switch mode {
	case "guide":
		return []string{"GROUP_COMMIT_INTERVAL=0"}, nil
	case "group-commit", "adaptive":
		if o.groupInterval != "" {
			return []string{"GROUP_COMMIT_INTERVAL=" + o.groupInterval}, nil
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown mode %q: use guide, group-commit or adaptive", mode)
}

// counterSettings is the ConfigureCounter request that sets up a counter for mode: pinned at shards
// shards, or in the adaptive mode starting at shards (num_shards with a bound is only the start) and
// left for the roll-up to size, never below shards; counting in windows, if any.
func counterSettings(mode, id string, shards int, windows []string) map[string]any {
	settings := map[string]any{"counter": id, "num_shards": shards}
	if mode == "adaptive" {
		settings["min_shards"] = shards
	}
	if len(windows) > 0 {
		settings["windows"] = windows
	}
	return settings
}

// requestTimeout is how long a client waits for an answer before it takes the outcome as unknown.
const requestTimeout = 30 * time.Second

var httpClient = &http.Client{Timeout: requestTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}

// observed is what a run's load saw, whichever way increments arrived.
type observed struct {
	outcomes   []loadreport.Outcomes // per counter; Exact is filled after the load
	offered    int64
	retries    int64
	answers    map[string]int64
	latencies  []time.Duration
	start, end time.Time // when the load started and when the last increment was answered
	drain      time.Duration
}

// runPlan starts a stack for p, loads it and measures it.
func runPlan(ctx context.Context, o options, p plan) (loadreport.Run, error) {
	if p.via == "documents" {
		return runDocumentsPlan(ctx, o, p)
	}
	if p.spread.counters > 0 {
		o.spread = p.spread
	}
	run := loadreport.Run{Name: p.name(), Mode: p.mode, Via: p.via, Instances: p.instances, Settings: map[string]string{
		"clients": fmt.Sprint(o.clients), "duration": o.duration.String(), "counters": fmt.Sprint(o.counters),
		"shards": fmt.Sprint(o.shards), "offered_rate": fmt.Sprint(o.rate), "kill_at": o.killAt.String(),
		"keyed_fraction": fmt.Sprint(o.keyedFraction), "zipf": fmt.Sprint(o.zipf),
	}}
	if p.via == "pubsub" {
		run.Settings["messages"], run.Settings["republish_fraction"] = fmt.Sprint(o.messages), fmt.Sprint(o.republishFraction)
	}
	env, err := modeEnv(o, p.mode)
	if err != nil {
		return run, err
	}
	run.Settings["env"] = fmt.Sprint(env)
	logDir, err := os.MkdirTemp("", "bench-"+p.mode+"-")
	if err != nil {
		return run, err
	}
	fmt.Fprintf(os.Stderr, "%s: starting the local stack (logs in %s)\n", run.Name, logDir)
	cfg := stackConfig{binary: o.localstack, project: "bench-" + p.mode, logDir: logDir, instances: p.instances, env: env}
	var proxy *faultproxy.Proxy
	if p.faults != nil {
		cfg.functionsFirestore = func(emulator string) (string, error) {
			// No faults until the counters are configured: the harness's own set-up must not fail.
			proxy, err = faultproxy.Start(emulator, faultproxy.Faults{})
			if err != nil {
				return "", err
			}
			return proxy.Addr(), nil
		}
	}
	s, err := startStack(cfg)
	if proxy != nil {
		defer proxy.Close()
	}
	if err != nil {
		return run, err
	}
	defer s.stop()
	os.Setenv("FIRESTORE_EMULATOR_HOST", s.firestore) // the harness reads the emulator directly, never through the proxy
	client, err := firestore.NewClient(ctx, s.project)
	if err != nil {
		return run, err
	}
	defer client.Close()

	ids := make([]string, o.counters)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%d", i)
		if err := post(s.functionsURL+"/ConfigureCounter", counterSettings(p.mode, ids[i], o.shards, o.windows)); err != nil {
			return run, err
		}
	}
	w := newWatcher(o, s, client, ids, p.via == "pubsub")
	logBytes := s.logBytes.Load()
	if proxy != nil {
		proxy.SetFaults(p.faults.faults)
	}
	var obs *observed
	if p.via == "pubsub" {
		obs, err = publishLoad(ctx, o, s, ids, w)
	} else {
		obs = httpLoad(ctx, o, s, ids, w)
	}
	if proxy != nil {
		proxy.SetFaults(faultproxy.Faults{})
		c := proxy.Counts()
		run.Faults = &loadreport.FaultCounts{Spec: p.faults.text, Connections: c.Connections, Eligible: c.Eligible, Resets: c.Resets, DroppedResponses: c.DroppedResponses}
	}
	if err != nil {
		return run, err
	}

	// How long after the last answer the roll-ups showed every count: the count the clients were
	// told where nothing was in doubt (exact must equal it, which the check below holds), the exact
	// count, read first, where something was. The exact counts for the check are read after: one
	// aggregation per counter, they would otherwise take the emulator's time from the roll-ups
	// being measured. Reading them after also catches an increment whose client gave up that was
	// applied meanwhile.
	readExact := func() error {
		for i, id := range ids {
			if obs.outcomes[i].Exact, err = exactCount(s.functionsURL, id); err != nil {
				return err
			}
		}
		return nil
	}
	targets := make([]int64, len(ids))
	for i, id := range ids {
		targets[i] = obs.outcomes[i].Acknowledged
		if obs.outcomes[i].Unknown > 0 {
			if targets[i], err = exactCount(s.functionsURL, id); err != nil {
				return run, err
			}
		}
	}
	run.TrailingEdge = waitRollups(ctx, client, ids, targets, obs.end)
	settled := time.Now()
	if err := readExact(); err != nil {
		return run, err
	}
	w.stop(settled)
	run.Killed = w.killed // read once the watcher, which sets it, has stopped
	run.End, run.Settings["logs"] = settled, logDir

	fill(&run, obs, w, p.faults != nil || o.killAt > 0)
	run.RollupInvocationsPer1000, run.RollupInstanceSecondsPer1000 = -1, -1
	if st, ok := s.eventStats(); ok && run.Acknowledged > 0 {
		run.RollupInvocationsPer1000 = float64(st.Invocations) * 1000 / float64(run.Acknowledged)
		run.RollupInstanceSecondsPer1000 = st.InstanceSeconds * 1000 / float64(run.Acknowledged)
		run.RollupAnswer = [3]time.Duration{st.AnswerTime.P50, st.AnswerTime.P99, st.AnswerTime.Max}
		run.EventDelay = [3]time.Duration{st.Lateness.P50, st.Lateness.P99, st.Lateness.Max}
	}
	if run.RequestsPerInstance, err = s.instanceRequests(); err != nil {
		return run, err
	}
	commits, err := commitlog.ReadFile(s.commitLog)
	if err != nil {
		return run, err
	}
	schema := config.Default().Schema()
	run.CountCommits(commits, obs.start, settled, schema.Rollups+"/", "/"+shared.ShardsCollection+"/", o.counters)
	s.stop() // the instances write their last summaries as they stop
	if run.Acknowledged > 0 {
		run.LogBytesPer1000 = float64(s.logBytes.Load()-logBytes) * 1000 / float64(run.Acknowledged)
	}
	return run, nil
}

// waitRollups waits (up to a minute) until the roll-up of every counter ids[i] shows targets[i],
// reading every roll-up not there yet in one batch every 20 ms, and returns how long after end the
// last of them first showed it, or -1 if one never did.
func waitRollups(ctx context.Context, client *firestore.Client, ids []string, targets []int64, end time.Time) time.Duration {
	schema := config.Default().Schema()
	waiting := make(map[string]int64, len(ids))
	for i, id := range ids {
		waiting[id] = targets[i]
	}
	var edge time.Duration
	for deadline := time.Now().Add(time.Minute); len(waiting) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return -1
		}
		refs := make([]*firestore.DocumentRef, 0, len(waiting))
		for id := range waiting {
			refs = append(refs, schema.RollupRef(client, id))
		}
		snaps, err := client.GetAll(ctx, refs)
		if err != nil {
			continue // the next round reads them again
		}
		seen := time.Since(end)
		for i, snap := range snaps {
			if count, err := snap.DataAt(shared.FieldCount); err == nil && count == waiting[refs[i].ID] {
				delete(waiting, refs[i].ID)
				edge = max(edge, seen)
			}
		}
	}
	return edge
}

// fill copies what the load observed into run and checks every counter's exact count.
func fill(run *loadreport.Run, obs *observed, w *watcher, disturbed bool) {
	run.Start, run.Duration = obs.start, obs.end.Sub(obs.start)
	run.Offered, run.Retries, run.Answers, run.Drain = obs.offered, obs.retries, obs.answers, obs.drain
	run.Outcomes, run.ExactCheckPass, run.ExactCheck = loadreport.CheckAll(obs.outcomes, disturbed)
	run.Acknowledged, run.Unknown = run.Outcomes.Acknowledged, run.Outcomes.Unknown
	run.NotApplied = run.Offered - run.Acknowledged - run.Unknown
	switch {
	case obs.drain > 0:
		run.IncrementsPerSecond = float64(run.Acknowledged) / obs.drain.Seconds()
	case run.Duration > 0:
		run.IncrementsPerSecond = float64(run.Acknowledged) / run.Duration.Seconds()
	}
	run.LatencyP50, run.LatencyP99, run.LatencyMax = loadreport.Percentile(obs.latencies, 0.5), loadreport.Percentile(obs.latencies, 0.99), loadreport.Percentile(obs.latencies, 1)
	run.StalenessP50, run.StalenessP99, run.StalenessMax = loadreport.Percentile(w.ages, 0.5), loadreport.Percentile(w.ages, 0.99), loadreport.Percentile(w.ages, 1)
	run.RollupAgeP50, run.RollupAgeP99, run.RollupAgeMax = loadreport.Percentile(w.behind, 0.5), loadreport.Percentile(w.behind, 0.99), loadreport.Percentile(w.behind, 1)
	run.Timeline = w.seconds
	for _, s := range w.seconds {
		run.FinalShards = s.Shards
	}
}

// post sends v as JSON and fails unless the answer is 2xx.
func post(url string, v any) error {
	body, _ := json.Marshal(v)
	resp, err := httpClient.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s %s", url, resp.Status, msg)
	}
	return nil
}

// countRetries bounds exactCount's attempts, one a second.
const countRetries = 60

// exactCount reads a counter's exact value through Count, asking again after a 503 (the emulator
// busy after a heavy run) for up to countRetries seconds.
func exactCount(functionsURL, id string) (int64, error) {
	resp, err := httpClient.Get(functionsURL + "/Count?counter=" + id)
	for try := 1; err == nil && resp.StatusCode == http.StatusServiceUnavailable && try < countRetries; try++ {
		resp.Body.Close()
		time.Sleep(time.Second)
		resp, err = httpClient.Get(functionsURL + "/Count?counter=" + id)
	}
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("count %s: %s %s", id, resp.Status, msg)
	}
	var a struct{ Count int64 }
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return 0, fmt.Errorf("count %s: %w", id, err)
	}
	return a.Count, nil
}

// tally is the outcome counts shared by a load's clients.
type tally struct {
	mu      sync.Mutex
	obs     *observed
	watcher *watcher
}

func newTally(obs *observed, w *watcher) *tally {
	return &tally{obs: obs, watcher: w}
}

// answer counts one attempt's answer.
func (t *tally) answer(kind string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.obs.answers[kind]++
}

// offer counts one increment started now.
func (t *tally) offer() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.obs.offered++
	t.watcher.offered(time.Now())
}

// done counts how counter k's increment ended.
func (t *tally) done(k int, out outcome, retries int, latency time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.obs.retries += int64(retries)
	switch out {
	case applied:
		t.obs.outcomes[k].Acknowledged++
		t.obs.latencies = append(t.obs.latencies, latency)
		t.watcher.acknowledged(k, time.Now())
	case unknown:
		t.obs.outcomes[k].Unknown++
	}
}

// recentLatencies are the last n acknowledged latencies, for progress lines.
func (t *tally) recentLatencies(n int) []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]time.Duration(nil), t.obs.latencies[max(0, len(t.obs.latencies)-n):]...)
}

// httpLoad drives Increment with o.clients clients for o.duration and waits for their last answers.
func httpLoad(ctx context.Context, o options, s *stack, ids []string, w *watcher) *observed {
	obs := &observed{outcomes: make([]loadreport.Outcomes, len(ids)), answers: map[string]int64{}, start: time.Now()}
	t := newTally(obs, w)
	w.start(obs.start, t)
	stop := obs.start.Add(o.duration)
	giveUp := stop.Add(requestTimeout)
	keyed := int(o.keyedFraction*float64(o.clients) + 0.5)
	var wg sync.WaitGroup
	for c := range o.clients {
		cl := &incrementClient{url: s.functionsURL + "/Increment", keyed: c < keyed, answer: t.answer}
		pick := counterPicker(o, c)
		wg.Go(func() {
			pace := newPacer(o)
			for i := c; time.Now().Before(stop); i++ {
				pace.wait()
				k := pick(i)
				t.offer()
				began := time.Now()
				out, retries := cl.increment(ctx, ids[k], giveUp)
				t.done(k, out, retries, time.Since(began))
			}
		})
	}
	wg.Wait()
	obs.end = time.Now()
	w.loadEnded()
	return obs
}

// pacer spaces one client's increments so that all clients together offer o.rate per second (no
// spacing when o.rate is 0).
type pacer struct {
	every time.Duration
	next  time.Time
}

func newPacer(o options) *pacer {
	p := &pacer{next: time.Now()}
	if o.rate > 0 {
		p.every = time.Duration(float64(o.clients) / o.rate * float64(time.Second))
	}
	return p
}

// wait sleeps until the client's next increment is due.
func (p *pacer) wait() {
	if p.every > 0 {
		p.next = p.next.Add(p.every)
		time.Sleep(time.Until(p.next))
	}
}

// counterPicker returns client c's choice of counter for its i-th increment: in turn over the
// counters, or from a Zipf distribution over them (counter 0 the most written) when o.zipf is set.
func counterPicker(o options, c int) func(i int) int {
	if o.zipf <= 1 {
		return func(i int) int { return i % o.counters }
	}
	z := rand.NewZipf(rand.New(rand.NewSource(int64(c)+1)), o.zipf, 1, uint64(o.counters-1))
	return func(int) int { return int(z.Uint64()) }
}
