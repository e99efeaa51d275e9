package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/firestoreflags"
	"github.com/shardcount/counters/sources"
)

// verifyOrRepair runs `sources verify|repair|backfill [flags] COUNTER...`: verify exits 1 when a
// counter still differs from its documents after -wait; repair rebases each;
// backfill bases the counters of existing documents (sources.Counting.Backfill).
func verifyOrRepair(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("sources "+args[0], flag.ContinueOnError)
	flags.SetOutput(stderr)
	db := firestoreflags.Add(flags, os.Getenv("GOOGLE_CLOUD_PROJECT"), cmp.Or(os.Getenv("FIRESTORE_DATABASE"), "(default)"))
	wait := flags.Duration("wait", 30*time.Second, "verify: how long a difference may last (events in flight) before it is drift")
	after := flags.String("after", "", "backfill: resume after this collection (the one an interrupted run names)")
	if err := flags.Parse(args[1:]); err != nil || flags.NArg() == 0 && args[0] != "backfill" {
		fmt.Fprintf(stderr, "usage: sources %s [-project P] [-database D] [-wait 30s] COUNTER...\n"+
			"       sources backfill [-project P] [-database D] [-after COLLECTION] [COUNTER_OR_PATTERN...]\n", args[0])
		return 2
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "sources:", err)
		return 2
	}
	set, err := sources.Load(cfg.CounterSources, cfg.Schema())
	if err != nil {
		fmt.Fprintln(stderr, "sources:", err)
		return 2
	}
	set.InheritCounterIDPattern(cfg.CounterIDs())
	ctx := context.Background()
	client, err := db.Client(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "sources:", err)
		return 2
	}
	defer client.Close()
	store := counter.NewStore(client, cfg.Schema(), counter.Options{DefaultNumShards: cfg.DefaultNumShards, DedupeTTL: cfg.DedupeTTL})
	counting := sources.NewCounting(set, store, client, slog.New(slog.NewJSONHandler(stderr, nil)), 0)
	if args[0] == "backfill" {
		return backfill(ctx, counting, set, flags.Args(), *after, stdout, stderr)
	}
	status := 0
	for _, id := range flags.Args() {
		if args[0] == "repair" {
			if err := counting.Repair(ctx, id); err != nil {
				fmt.Fprintf(stderr, "sources repair %s: %v\n", id, err)
				status = 1
				continue
			}
			fmt.Fprintf(stdout, "%s: repaired\n", id)
			continue
		}
		drift, err := verify(ctx, counting, id, *wait)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "sources verify %s: %v\n", id, err)
			status = 1
		case drift.Value != drift.Documents:
			fmt.Fprintf(stdout, "%s: DRIFT: counter %d, %s's documents %d at %s (sources repair %s fixes it)\n",
				id, drift.Value, drift.Collection, drift.Documents, drift.At.Format(time.RFC3339Nano), id)
			status = 1
		default:
			fmt.Fprintf(stdout, "%s: exact: %d at %s\n", id, drift.Value, drift.At.Format(time.RFC3339Nano))
		}
	}
	return status
}

// verify compares counter id with its documents each second until they agree or wait passes.
func verify(ctx context.Context, counting *sources.Counting, id string, wait time.Duration) (sources.Drift, error) {
	deadline := time.Now().Add(wait)
	for {
		drift, err := counting.Verify(ctx, id, time.Now().Add(-100*time.Millisecond))
		if err != nil || drift.Value == drift.Documents || time.Now().After(deadline) {
			return drift, err
		}
		time.Sleep(time.Second)
	}
}

// backfill bases the counters of the named declarations (all when none is named) and counters.
func backfill(ctx context.Context, counting *sources.Counting, set *sources.Set, names []string, after string, stdout, stderr io.Writer) int {
	var declarations, ids []string
	for _, n := range names {
		if set.Names(n) {
			declarations = append(declarations, n)
		} else {
			ids = append(ids, n)
		}
	}
	for _, id := range ids {
		if err := counting.Establish(ctx, id); err != nil {
			fmt.Fprintf(stderr, "sources backfill %s: %v\n", id, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: based\n", id)
	}
	if len(ids) > 0 && len(declarations) == 0 {
		return 0
	}
	last, err := counting.Backfill(ctx, declarations, after, func(id, collection string) {
		fmt.Fprintf(stdout, "%s: based (%s)\n", id, collection)
	})
	if err != nil {
		fmt.Fprintf(stderr, "sources backfill: %v\nresume with: sources backfill -after '%s' %s\n", err, last, strings.Join(declarations, " "))
		return 1
	}
	return 0
}
