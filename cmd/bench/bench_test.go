package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/commitlog"
)

// TestThreeInstancesShareTheLoadAndCountExactly runs the harness with 3 functions processes behind
// the stack's balancer: the load is spread over all of them, every acknowledged increment is counted
// exactly once, and the report's per-document write rates match a direct count of the commit log.
func TestThreeInstancesShareTheLoadAndCountExactly(t *testing.T) {
	o := testOptions(t)
	o.clients, o.counters = 24, 2
	run := runForTest(t, o, plan{via: "http", mode: "group-commit", instances: 3})
	if !run.ExactCheckPass || run.Outcomes.Exact != run.Acknowledged || run.Acknowledged == 0 {
		t.Errorf("exact count: %s (exact %d, acknowledged %d): with no faults they must be equal", run.ExactCheck, run.Outcomes.Exact, run.Acknowledged)
	}
	if run.TrailingEdge < 0 {
		t.Errorf("no roll-up was seen exact within a minute of the load: the trailing edge is unmeasured")
	}
	if len(run.RequestsPerInstance) != 3 || slices.Min(run.RequestsPerInstance) < slices.Max(run.RequestsPerInstance)/3 {
		t.Errorf("requests per instance %v: want 3 instances sharing the load", run.RequestsPerInstance)
	}
	var offered int64
	for _, s := range run.Timeline {
		offered += s.Offered
	}
	if offered != run.Offered || run.Timeline[0].Shards != o.shards {
		t.Errorf("timeline: offered %d (run %d), shards %d (want %d)", offered, run.Offered, run.Timeline[0].Shards, o.shards)
	}

	commits, err := commitlog.ReadFile(filepath.Join(run.Settings["logs"], "commits.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, window := range []int{1, 10} {
		want := bruteForceHottest(commits, run.Start, run.End, window, "/shards/")
		got := run.HottestShard1s
		if window == 10 {
			got = run.HottestShard10s
		}
		if got.WritesPerSecond != want || want == 0 {
			t.Errorf("hottest shard over %d s windows: report %+v, commit log %.2f", window, got, want)
		}
	}
}

// bruteForceHottest is the highest writes/s of a document containing marker over any window of
// window seconds (the whole span when shorter), counted directly from the commits.
func bruteForceHottest(commits []commitlog.Commit, from, to time.Time, window int, marker string) float64 {
	seconds := int((to.Sub(from) + time.Second - 1) / time.Second)
	n := min(window, seconds)
	best := 0.0
	for first := 0; first+n <= seconds; first++ {
		lo, hi := from.Add(time.Duration(first)*time.Second), from.Add(time.Duration(first+n)*time.Second)
		writes := map[string]int{}
		for _, c := range commits {
			if c.Time.Before(lo) || !c.Time.Before(hi) || !c.Time.Before(to) {
				continue
			}
			for _, d := range c.Docs {
				if strings.Contains(d, marker) {
					writes[d]++
				}
			}
		}
		for _, w := range writes {
			best = max(best, float64(w)/float64(n))
		}
	}
	return best
}

// TestFaultsKeyedClientsCountExactly puts the fault proxy between the functions and Firestore,
// resetting connections and dropping responses, with every client keyed: a keyed increment is one
// transaction with its dedupe record, so a retry (the client's or the Firestore library's) can never
// double it, and the harness's check must pass: acknowledged <= exact <= acknowledged + unknown.
// The faults must really have been injected: the proxy spreads them, so the first 25 eligible
// requests at these rates meet one.
func TestFaultsKeyedClientsCountExactly(t *testing.T) {
	o := testOptions(t)
	o.keyedFraction = 1
	spec, err := parseFaults("reset=0.02,drop=0.02")
	if err != nil {
		t.Fatal(err)
	}
	run := runForTest(t, o, plan{via: "http", mode: "group-commit", instances: 2, faults: spec})
	if run.Faults == nil || run.Faults.Resets+run.Faults.DroppedResponses == 0 {
		t.Fatalf("no fault was injected (the first 25 eligible requests meet one): %+v", run.Faults)
	}
	if !run.ExactCheckPass {
		t.Errorf("keyed increments under faults: %s", run.ExactCheck)
	}
}

// TestPubSubBurstIsCountedOnce publishes a burst to the stack's Pub/Sub emulator, some messages twice
// with the same idempotency key, pushed to 2 instances through the balancer: the exact count must take
// in every published increment once.
func TestPubSubBurstIsCountedOnce(t *testing.T) {
	o := testOptions(t)
	o.counters, o.republishFraction = 2, 0.2
	run := runForTest(t, o, plan{via: "pubsub", mode: "group-commit", instances: 2})
	if run.Acknowledged != int64(o.messages) || run.Answers["republished (same key)"] == 0 {
		t.Errorf("published %d of %d messages, %d republished", run.Acknowledged, o.messages, run.Answers["republished (same key)"])
	}
	if !run.ExactCheckPass || run.Outcomes.Exact != run.Acknowledged || run.Drain <= 0 {
		t.Errorf("exact count: %s, drained in %s", run.ExactCheck, run.Drain)
	}
}

// TestRunsAreEveryCombinationOfTheListFlags checks how flags become runs and fault settings.
func TestRunsAreEveryCombinationOfTheListFlags(t *testing.T) {
	one := []spread{{counters: 1}}
	plans, err := plansOf("http,pubsub", "group-commit", "1,4", "none;reset=0.1,drop=0.2,delay=3ms,match=/shards/", one)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range plans {
		names = append(names, p.name())
	}
	want := []string{
		"http group-commit K=1 faults=none", "http group-commit K=1 faults=reset=0.1,drop=0.2,delay=3ms,match=/shards/",
		"http group-commit K=4 faults=none", "http group-commit K=4 faults=reset=0.1,drop=0.2,delay=3ms,match=/shards/",
		"pubsub group-commit K=1 faults=none", "pubsub group-commit K=1 faults=reset=0.1,drop=0.2,delay=3ms,match=/shards/",
		"pubsub group-commit K=4 faults=none", "pubsub group-commit K=4 faults=reset=0.1,drop=0.2,delay=3ms,match=/shards/",
	}
	if !slices.Equal(names, want) {
		t.Errorf("runs = %q, want %q", names, want)
	}
	f := plans[1].faults.faults
	if f.ResetRate != 0.1 || f.DropResponseRate != 0.2 || f.Delay != 3*time.Millisecond || string(f.Match) != "/shards/" {
		t.Errorf("faults = %+v", f)
	}
	for _, bad := range [][4]string{{"smtp", "guide", "1", ""}, {"http", "guide", "0", ""}, {"http", "guide", "1", "reset=2"}, {"http", "guide", "1", "jitter=1"}} {
		if _, err := plansOf(bad[0], bad[1], bad[2], bad[3], one); err == nil {
			t.Errorf("plansOf(%q) accepted", bad)
		}
	}
}

// TestManyCountersRunsAreEachCountWithEachSpread checks make bench's many-counters set: -counters
// 1,100,1000 -zipf 0,1.1 is one run of one counter (a Zipf spread over one counter is the even one)
// and two of each other count, named so the report's columns tell them apart.
func TestManyCountersRunsAreEachCountWithEachSpread(t *testing.T) {
	loads, err := loadsOf("1,100,1000", "0,1.1")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := plansOf("http", "adaptive", "2", "", loads)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range plans {
		names = append(names, p.name())
	}
	want := []string{
		"http adaptive K=2", "http adaptive K=2 counters=100", "http adaptive K=2 counters=100 zipf=1.1",
		"http adaptive K=2 counters=1000", "http adaptive K=2 counters=1000 zipf=1.1",
	}
	if !slices.Equal(names, want) {
		t.Errorf("runs = %q, want %q", names, want)
	}
	for _, bad := range [][2]string{{"0", "0"}, {"10001", "0"}, {"100", "1"}, {"100", "0.5"}, {"many", "0"}} {
		if _, err := loadsOf(bad[0], bad[1]); err == nil {
			t.Errorf("loadsOf(%q) accepted", bad)
		}
	}
}
