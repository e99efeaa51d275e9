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

// options are the flags that apply to every run (see their help in main).
type options struct {
	clients                 int
	duration                time.Duration
	spread                  // a plan's, when it has one
	shards                  int
	windows                 []string
	rate                    float64
	groupInterval           string
	killAt                  time.Duration
	localstack              string
	keyedFraction           float64
	messages                int
	republishFraction       float64
	drainTimeout            time.Duration
	parents, likers, copies int
	writeTimeInFlight       int
}

// spread is how a run's increments spread over its counters.
type spread struct {
	counters int
	zipf     float64 // Zipf exponent (> 1); 0 spreads evenly
}

// plan is one run of the combinations of the list flags.
type plan struct {
	via       string
	mode      string
	instances int
	faults    *faultSpec // nil: no proxy
	spread    spread     // replaces the options' when counters is not 0
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

// counterSettings is the ConfigureCounter request for mode: pinned at shards, or (adaptive) at
// least shards, sized by the roll-up.
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

// requestTimeout is how long a client waits before taking the outcome as unknown.
const requestTimeout = 30 * time.Second

var httpClient = &http.Client{Timeout: requestTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}

// observed is what a run's load saw, whichever way increments arrived.
type observed struct {
	outcomes   []loadreport.Outcomes // per counter; Exact is filled after the load
	offered    int64
	retries    int64
	answers    map[string]int64
	latencies  []time.Duration
	start, end time.Time // end: the last answer
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
			// No faults during the harness's own set-up.
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
	os.Setenv("FIRESTORE_EMULATOR_HOST", s.firestore) // never through the proxy
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

	// Roll-up lag targets the told count (exact, where in doubt); the check's exact counts are read
	// after, so their aggregations do not slow the roll-ups measured.
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
	run.Killed = w.killed // the watcher has stopped
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

// waitRollups waits up to a minute until each roll-up ids[i] shows targets[i], and returns how long
// after end the last did, or -1 if one never did.
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
			continue
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

// exactCount reads a counter's exact value through Count, retrying 503s countRetries times.
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

// recorder records what a load's clients observe, under one lock.
type recorder struct {
	mu      sync.Mutex
	obs     *observed
	watcher *watcher
}

func newRecorder(obs *observed, w *watcher) *recorder {
	return &recorder{obs: obs, watcher: w}
}

// answer counts one attempt's answer.
func (r *recorder) answer(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs.answers[kind]++
}

// offer counts one increment started now.
func (r *recorder) offer() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs.offered++
	r.watcher.offered(time.Now())
}

// done counts how counter k's increment ended.
func (r *recorder) done(k int, out outcome, retries int, latency time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs.retries += int64(retries)
	switch out {
	case applied:
		r.obs.outcomes[k].Acknowledged++
		r.obs.latencies = append(r.obs.latencies, latency)
		r.watcher.acknowledged(k, time.Now())
	case unknown:
		r.obs.outcomes[k].Unknown++
	}
}

// recentLatencies are the last n acknowledged latencies, for progress lines.
func (r *recorder) recentLatencies(n int) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.obs.latencies[max(0, len(r.obs.latencies)-n):]...)
}

// httpLoad drives Increment with o.clients clients for o.duration.
func httpLoad(ctx context.Context, o options, s *stack, ids []string, w *watcher) *observed {
	obs := &observed{outcomes: make([]loadreport.Outcomes, len(ids)), answers: map[string]int64{}, start: time.Now()}
	t := newRecorder(obs, w)
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

// pacer spaces a client's increments so all together offer o.rate per second (0: no spacing).
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

// counterPicker returns client c's counter for its i-th increment: in turn, or by o.zipf.
func counterPicker(o options, c int) func(i int) int {
	if o.zipf <= 1 {
		return func(i int) int { return i % o.counters }
	}
	z := rand.NewZipf(rand.New(rand.NewSource(int64(c)+1)), o.zipf, 1, uint64(o.counters-1))
	return func(int) int { return int(z.Uint64()) }
}
