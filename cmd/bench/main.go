// Command bench is the load harness: it runs the local stack once per run, drives it, and reports
// the runs side by side. See docs/performance.md, "The load harness".
//
//	go run ./cmd/bench -clients 64 -duration 60s -counters 1 -shards 10
//	go run ./cmd/bench -modes group-commit -instances 1,4,8,16 -rate 2000 -clients 400
//	go run ./cmd/bench -modes group-commit -instances 2 -faults 'none;reset=0.02;drop=0.02' -keyed-fraction 0.5
//	go run ./cmd/bench -via pubsub -messages 3000
//	go run ./cmd/bench -kill-at 10s   # crash check: SIGKILL a functions process mid-run
//
// It exits 2 when a run fails the exact count check.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/loadreport"
	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/shellwords"
)

func main() {
	var o options
	flag.IntVar(&o.clients, "clients", 64, "concurrent clients (HTTP) or publishers (Pub/Sub)")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "how long HTTP clients send increments")
	counters := flag.String("counters", "1", "comma-separated numbers of counters the clients spread over (up to 10,000 each), e.g. 1,100,1000")
	zipfs := flag.String("zipf", "0", "comma-separated: pick each increment's counter from a Zipf distribution with this exponent (> 1, e.g. 1.1); 0 spreads increments evenly")
	flag.IntVar(&o.shards, "shards", 10, "shards per counter (ConfigureCounter before the load)")
	windows := flag.String("windows", "", "comma-separated windows every counter counts in: hour, day, month (default: none)")
	flag.Float64Var(&o.rate, "rate", 0, "offered increments per second over all clients (0: as fast as answers come)")
	flag.StringVar(&o.groupInterval, "group-interval", "", "GROUP_COMMIT_INTERVAL of the group-commit mode (default: the code's)")
	flag.DurationVar(&o.killAt, "kill-at", 0, "crash check: SIGKILL a functions process this long into each run (0: never)")
	flag.StringVar(&o.localstack, "localstack", "bin/localstack", "the local stack binary (make build)")
	flag.Float64Var(&o.keyedFraction, "keyed-fraction", 0, "fraction of HTTP clients that send an Idempotency-Key and retry unknown outcomes with it")
	flag.IntVar(&o.messages, "messages", 3000, "Pub/Sub: increments published in the burst")
	flag.Float64Var(&o.republishFraction, "republish-fraction", 0.05, "Pub/Sub: fraction of messages published twice with the same idempotency key")
	flag.DurationVar(&o.drainTimeout, "drain-timeout", 5*time.Minute, "Pub/Sub: how long to wait for the published increments to be counted")
	flag.IntVar(&o.parents, "parents", 100, "documents: posts whose likes change (one collection counter each)")
	flag.IntVar(&o.likers, "likers", 20, "documents: possible likers of each post (like documents: parents × likers)")
	flag.IntVar(&o.copies, "copies", 2, "documents: deliveries of each Firestore event (2: every event redelivered once, as at-least-once delivery may)")
	flag.IntVar(&o.writeTimeInFlight, "write-time-in-flight", 100, "documents: events delivered at once to the write-time aggregation (its transactions on the parents contend in the emulator; the stack's bridge delivers "+fmt.Sprint(localstack.EventsInFlight())+" at once to ours)")
	vias := flag.String("via", "http", "comma-separated ways increments arrive: http, pubsub; or documents: clients create and delete like documents in Firestore (-modes collection, field: flat likes counted by their postId, a third of the changes moving one, write-time)")
	modes := flag.String("modes", "guide,group-commit", "comma-separated modes: guide, group-commit (shards pinned), adaptive (group commit, shard count follows the load)")
	instances := flag.String("instances", "1", "comma-separated numbers of functions processes behind the stack's balancer, e.g. 1,4,8,16")
	faults := flag.String("faults", "", "semicolon-separated fault settings of a proxy between the functions and Firestore, one run each: "+
		"none, or comma-separated reset=RATE, drop=RATE, delay=DURATION, match=BYTES (e.g. 'none;reset=0.02;drop=0.02')")
	out := flag.String("out", "bench", "directory for report.json, report.md and the plots")
	flag.Parse()

	if *windows != "" {
		o.windows = strings.Split(*windows, ",")
	}
	loads, err := loadsOf(*counters, *zipfs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	plans, err := plansOf(*vias, *modes, *instances, *faults, loads)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	rep := loadreport.Report{Command: "go run ./cmd/bench " + shellwords.Join(os.Args[1:])}
	for _, p := range plans {
		run, err := runPlan(context.Background(), o, p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", p.name(), err)
			os.Exit(1)
		}
		rep.Runs = append(rep.Runs, run)
	}
	rep.Compare()
	if err := writeReport(*out, &rep); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if err := rep.WriteMarkdown(os.Stdout, nil); err != nil {
		os.Exit(1)
	}
	if !rep.Passed() {
		fmt.Fprintln(os.Stderr, "bench: FAIL: an exact count differs from what the clients were told (see \"exact count check\")")
		os.Exit(2)
	}
}

// loadsOf is every combination of -counters and -zipf, one counter only once.
func loadsOf(counters, zipfs string) ([]spread, error) {
	var exponents []float64
	for _, s := range strings.Split(zipfs, ",") {
		z, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || (z != 0 && z <= 1) {
			return nil, fmt.Errorf("-zipf %q: want exponents more than 1 (or 0 for an even spread), e.g. 0,1.1", zipfs)
		}
		exponents = append(exponents, z)
	}
	var loads []spread
	for _, s := range strings.Split(counters, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 10000 {
			return nil, fmt.Errorf("-counters %q: want numbers from 1 to 10,000, e.g. 1,100,1000", counters)
		}
		if n == 1 {
			loads = append(loads, spread{counters: 1})
			continue
		}
		for _, z := range exponents {
			loads = append(loads, spread{counters: n, zipf: z})
		}
	}
	return loads, nil
}

// plansOf is every combination of the list flags, in the order given.
func plansOf(vias, modes, instances, faults string, loads []spread) ([]plan, error) {
	var ks []int
	for _, s := range strings.Split(instances, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 1 {
			return nil, fmt.Errorf("-instances %q: want numbers of 1 or more, e.g. 1,4,8", instances)
		}
		ks = append(ks, k)
	}
	specs := []*faultSpec{nil}
	if faults != "" {
		specs = nil
		for _, text := range strings.Split(faults, ";") {
			spec, err := parseFaults(strings.TrimSpace(text))
			if err != nil {
				return nil, err
			}
			specs = append(specs, spec)
		}
	}
	var plans []plan
	if vias == "documents" {
		for _, mode := range strings.Split(modes, ",") {
			if _, ok := documentModes[mode]; !ok {
				return nil, fmt.Errorf("-modes %q: -via documents takes collection, write-time or both", modes)
			}
			for _, k := range ks {
				plans = append(plans, plan{via: "documents", mode: mode, instances: k})
			}
		}
		return plans, nil
	}
	for _, via := range strings.Split(vias, ",") {
		if via == "documents" {
			return nil, fmt.Errorf("-via %q: documents runs alone", vias)
		}
		if via != "http" && via != "pubsub" && via != "documents" {
			return nil, fmt.Errorf("-via %q: use http, pubsub or both, or documents", via)
		}
		for _, mode := range strings.Split(modes, ",") {
			for _, k := range ks {
				for _, spec := range specs {
					for _, l := range loads {
						plans = append(plans, plan{via: via, mode: mode, instances: k, faults: spec, spread: l})
					}
				}
			}
		}
	}
	return plans, nil
}

// faultSpec is one -faults setting.
type faultSpec struct {
	text   string
	faults faultproxy.Faults
}

// parseFaults reads "none" or "reset=0.02,drop=0.01,delay=2ms,match=/shards/".
func parseFaults(text string) (*faultSpec, error) {
	spec := &faultSpec{text: text}
	if text == "none" {
		return spec, nil
	}
	for _, part := range strings.Split(text, ",") {
		name, value, _ := strings.Cut(part, "=")
		var err error
		switch name {
		case "reset":
			spec.faults.ResetRate, err = parseRate(value)
		case "drop":
			spec.faults.DropResponseRate, err = parseRate(value)
		case "delay":
			spec.faults.Delay, err = time.ParseDuration(value)
		case "match":
			spec.faults.Match = []byte(value)
		default:
			err = fmt.Errorf("unknown fault %q", name)
		}
		if err != nil {
			return nil, fmt.Errorf("-faults %q: %w (want none, or reset=RATE,drop=RATE,delay=DURATION,match=BYTES)", text, err)
		}
	}
	return spec, nil
}

// parseRate reads a probability.
func parseRate(s string) (float64, error) {
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r < 0 || r > 1 {
		return 0, fmt.Errorf("rate %q is not a probability between 0 and 1", s)
	}
	return r, nil
}

// writeReport writes report.json, report.md and a plot per run to dir.
func writeReport(dir string, rep *loadreport.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	plotName := func(i int) string { return fmt.Sprintf("run-%d.svg", i+1) }
	for i, run := range rep.Runs {
		if err := writePlot(filepath.Join(dir, plotName(i)), run); err != nil {
			return err
		}
	}
	md, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	defer md.Close()
	return rep.WriteMarkdown(md, plotName)
}

// writePlot writes run's plot as SVG at path, and as PNG beside it if rsvg-convert is installed.
func writePlot(path string, run loadreport.Run) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if err := run.WritePlot(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if converter, err := exec.LookPath("rsvg-convert"); err == nil {
		png := strings.TrimSuffix(path, ".svg") + ".png"
		if out, err := exec.Command(converter, "-o", png, path).CombinedOutput(); err != nil {
			return fmt.Errorf("render %s: %v: %s", png, err, out)
		}
	}
	return nil
}
