// Command bench is the load harness: it starts the local stack (bin/localstack) once per mode, drives
// it over HTTP with C concurrent clients for D seconds on K counters, shows live progress, and writes
// a JSON and a Markdown report with the modes side by side: throughput, latency, Firestore commits and
// documents written per 1,000 increments (from the commits the functions really made), the hottest
// document's writes per second, roll-up staleness and write rate, and whether every acknowledged
// increment is in the exact count.
//
//	go run ./cmd/bench -clients 64 -duration 60s -counters 1 -shards 10
//	go run ./cmd/bench -kill-at 10s   # crash check: SIGKILL the functions process mid-run
//
// Modes: "guide" writes every increment to a random shard (GROUP_COMMIT_INTERVAL=0), as the Firebase
// guide's sample does; "group-commit" is the project's default.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shardcount/counters/internal/loadreport"
)

func main() {
	var o options
	flag.IntVar(&o.clients, "clients", 64, "concurrent clients")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "how long clients send increments")
	flag.IntVar(&o.counters, "counters", 1, "counters the clients spread over")
	flag.IntVar(&o.shards, "shards", 10, "shards per counter")
	flag.Float64Var(&o.rate, "rate", 0, "offered increments per second over all clients (0: as fast as answers come)")
	modes := flag.String("modes", "guide,group-commit", "comma-separated modes to run side by side: guide, group-commit")
	flag.StringVar(&o.groupInterval, "group-interval", "", "GROUP_COMMIT_INTERVAL of the group-commit mode (default: the code's)")
	flag.DurationVar(&o.killAt, "kill-at", 0, "crash check: SIGKILL the functions process this long into each run (0: never)")
	flag.StringVar(&o.localstack, "localstack", "bin/localstack", "the local stack binary (make build)")
	out := flag.String("out", "bench", "directory for report.json and report.md")
	flag.Parse()

	rep := loadreport.Report{Command: "go run ./cmd/bench " + strings.Join(os.Args[1:], " ")}
	ok := true
	for _, mode := range strings.Split(*modes, ",") {
		run, err := runMode(context.Background(), o, mode)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", mode, err)
			os.Exit(1)
		}
		ok = ok && run.ExactCheckPass
		rep.Runs = append(rep.Runs, run)
	}
	rep.Compare()
	if err := writeReport(*out, &rep); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if err := rep.WriteMarkdown(os.Stdout); err != nil {
		os.Exit(1)
	}
	if !ok {
		fmt.Fprintln(os.Stderr, "bench: an acknowledged increment is missing from the exact count")
		os.Exit(2)
	}
}

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
	md, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	defer md.Close()
	return rep.WriteMarkdown(md)
}
