package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/internal/loadreport"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
)

// options are the harness's flags.
type options struct {
	clients       int
	duration      time.Duration
	counters      int
	shards        int
	rate          float64
	groupInterval string
	killAt        time.Duration
	localstack    string
}

// modeEnv is the functions' environment of each mode.
func modeEnv(o options, mode string) ([]string, error) {
	switch mode {
	case "guide":
		return []string{shared.EnvGroupCommit + "=0"}, nil
	case "group-commit":
		if o.groupInterval != "" {
			return []string{shared.EnvGroupCommit + "=" + o.groupInterval}, nil
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown mode %q: use guide or group-commit", mode)
}

var httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}

// runMode starts a stack for mode, loads it and measures it.
func runMode(ctx context.Context, o options, mode string) (loadreport.Run, error) {
	run := loadreport.Run{Mode: mode, Settings: map[string]string{
		"clients": fmt.Sprint(o.clients), "duration": o.duration.String(), "counters": fmt.Sprint(o.counters),
		"shards": fmt.Sprint(o.shards), "offered_rate": fmt.Sprint(o.rate), "kill_at": o.killAt.String(),
	}}
	env, err := modeEnv(o, mode)
	if err != nil {
		return run, err
	}
	run.Settings["env"] = fmt.Sprint(env)
	logDir, err := os.MkdirTemp("", "bench-"+mode+"-")
	if err != nil {
		return run, err
	}
	fmt.Fprintf(os.Stderr, "%s: starting the local stack (logs in %s)\n", mode, logDir)
	s, err := startStack(o.localstack, "bench-"+mode, logDir, env...)
	if err != nil {
		return run, err
	}
	defer s.stop()
	os.Setenv("FIRESTORE_EMULATOR_HOST", s.firestore) // the harness reads roll-ups from the same emulator
	client, err := firestore.NewClient(ctx, s.project)
	if err != nil {
		return run, err
	}
	defer client.Close()

	ids := make([]string, o.counters)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%d", i)
		if err := post(s.functionsURL+"/ConfigureCounter", map[string]any{"counter": ids[i], "num_shards": o.shards}); err != nil {
			return run, err
		}
	}

	l := newLoad(o, s, ids)
	start := time.Now()
	l.run(client)
	end := time.Now()
	run.Duration = end.Sub(start)

	// Trailing edge: how long after the last acknowledged increment the roll-ups were all exact.
	schema := shared.DefaultConfig().Schema
	store := rollup.NewStore(client, schema)
	for i, id := range ids {
		deadline := time.Now().Add(time.Minute)
		for {
			d, err := store.Get(ctx, id)
			if err == nil && d != nil && d.Count >= l.acked[i].Load() && d.Count <= l.attempted[i].Load() {
				run.TrailingEdge = max(run.TrailingEdge, time.Since(end))
				break
			}
			if time.Now().After(deadline) {
				run.TrailingEdge = -1
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	settled := time.Now()

	l.fill(&run)
	run.ExactCheckPass = true
	for i, id := range ids {
		exact, err := exactCount(s.functionsURL, id)
		if err != nil {
			return run, err
		}
		run.ExactCount += exact
		acked, attempted := l.acked[i].Load(), l.attempted[i].Load()
		// Every acknowledged increment must be counted; an unanswered one (a crash) may or may not be.
		if exact < acked || exact > attempted {
			run.ExactCheckPass = false
		}
	}
	run.ExactCheck = fmt.Sprintf("exact %d, acknowledged %d, sent %d", run.ExactCount, run.Acknowledged, run.Acknowledged+run.Failed)

	f, err := os.Open(s.commitLog)
	if err != nil {
		return run, fmt.Errorf("commit log: %w", err)
	}
	defer f.Close()
	commits, err := commitlog.Read(f)
	if err != nil {
		return run, err
	}
	run.CountCommits(commits, start, settled, schema.Rollups+"/", "/"+shared.ShardsCollection+"/", o.counters)
	return run, nil
}

// load is one run's clients and what they observed.
type load struct {
	o         options
	s         *stack
	ids       []string
	acked     []atomic.Int64
	attempted []atomic.Int64
	failed    atomic.Int64

	mu        sync.Mutex
	latencies []time.Duration
	ages      []time.Duration
}

func newLoad(o options, s *stack, ids []string) *load {
	return &load{o: o, s: s, ids: ids, acked: make([]atomic.Int64, len(ids)), attempted: make([]atomic.Int64, len(ids))}
}

// run drives the clients for the duration, samples roll-up ages, prints progress each second, and
// kills the functions process once if asked.
func (l *load) run(client *firestore.Client) {
	stop := time.Now().Add(l.o.duration)
	var wg sync.WaitGroup
	var pace time.Duration
	if l.o.rate > 0 {
		pace = time.Duration(float64(l.o.clients) / l.o.rate * float64(time.Second))
	}
	for c := range l.o.clients {
		wg.Go(func() {
			next := time.Now()
			for i := c; time.Now().Before(stop); i++ {
				if pace > 0 {
					next = next.Add(pace)
					time.Sleep(time.Until(next))
				}
				k := i % len(l.ids)
				l.attempted[k].Add(1)
				began := time.Now()
				if err := post(l.s.functionsURL+"/Increment", map[string]any{"counter": l.ids[k]}); err != nil {
					l.failed.Add(1)
					continue
				}
				l.acked[k].Add(1)
				l.mu.Lock()
				l.latencies = append(l.latencies, time.Since(began))
				l.mu.Unlock()
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	start := time.Now()
	sample := time.NewTicker(200 * time.Millisecond)
	defer sample.Stop()
	lastProgress, killed := start, false
	store := rollup.NewStore(client, shared.DefaultConfig().Schema)
	for {
		select {
		case <-done:
			return
		case now := <-sample.C:
			for _, id := range l.ids {
				if d, err := store.Get(context.Background(), id); err == nil && d != nil {
					l.mu.Lock()
					l.ages = append(l.ages, now.Sub(d.UpdatedAt))
					l.mu.Unlock()
				}
			}
			if l.o.killAt > 0 && !killed && now.Sub(start) >= l.o.killAt {
				killed = true
				err := l.s.killFunctions()
				fmt.Fprintf(os.Stderr, "  killed the functions process at %s (err: %v)\n", now.Sub(start).Round(time.Second), err)
			}
			if now.Sub(lastProgress) >= time.Second {
				lastProgress = now
				l.progress(now.Sub(start))
			}
		}
	}
}

// progress prints one line of live figures.
func (l *load) progress(elapsed time.Duration) {
	var acked int64
	for i := range l.acked {
		acked += l.acked[i].Load()
	}
	l.mu.Lock()
	recent := l.latencies[max(0, len(l.latencies)-2000):]
	p50, p99 := loadreport.Percentile(recent, 0.5), loadreport.Percentile(recent, 0.99)
	l.mu.Unlock()
	fmt.Fprintf(os.Stderr, "  %3.0fs  acknowledged %7d (%5.0f/s)  failed %d  latency p50 %s p99 %s\n",
		elapsed.Seconds(), acked, float64(acked)/elapsed.Seconds(), l.failed.Load(), p50.Round(time.Millisecond), p99.Round(time.Millisecond))
}

// fill copies the load's figures into run.
func (l *load) fill(run *loadreport.Run) {
	for i := range l.acked {
		run.Acknowledged += l.acked[i].Load()
	}
	run.Failed = l.failed.Load()
	run.IncrementsPerSecond = float64(run.Acknowledged) / run.Duration.Seconds()
	l.mu.Lock()
	defer l.mu.Unlock()
	run.LatencyP50, run.LatencyP99, run.LatencyMax = loadreport.Percentile(l.latencies, 0.5), loadreport.Percentile(l.latencies, 0.99), loadreport.Percentile(l.latencies, 1)
	run.StalenessP50, run.StalenessP99, run.StalenessMax = loadreport.Percentile(l.ages, 0.5), loadreport.Percentile(l.ages, 0.99), loadreport.Percentile(l.ages, 1)
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

// exactCount reads a counter's exact value through Count.
func exactCount(functionsURL, id string) (int64, error) {
	resp, err := httpClient.Get(functionsURL + "/Count?counter=" + id)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var a struct{ Count int64 }
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return 0, fmt.Errorf("count %s: %w", id, err)
	}
	return a.Count, nil
}
