// Command movemembers moves distinct counters' members from counters/{id}/members to
// counters/{id}/counter_members (CHANGELOG.md, 0.9.0, "Upgrading"). Run it once every function runs
// this release; it is safe to rerun, also while the functions serve.
//
//	COUNTERS_COLLECTION=counters go run ./cmd/movemembers -project P [-database D]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/firestoreflags"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "movemembers:", err)
		os.Exit(2)
	}
}

// maxPasses bounds the passes; the third should find nothing.
const maxPasses = 4

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	flags := flag.NewFlagSet("movemembers", flag.ContinueOnError)
	db := firestoreflags.Add(flags, cfg.Project, cfg.Database)
	settle := flags.Duration("settle", 2*cfg.ShardCountCacheTTL+time.Second,
		"wait between passes: longer than the functions' SHARD_COUNT_CACHE_TTL")
	if err := flags.Parse(args); err != nil {
		return err
	}
	client, err := db.Client(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	members := counter.NewStore(client, cfg.Schema(), counter.Options{DefaultNumShards: cfg.DefaultNumShards}).Members
	for n := 1; n <= maxPasses; n++ {
		pass, err := members.MoveLegacyMembers(ctx)
		fmt.Fprintf(out, "pass %d: moved %d member documents, marked %d counters\n", n, pass.Moved, pass.Marked)
		if err != nil {
			return err
		}
		if n > 1 && pass.Moved == 0 {
			fmt.Fprintf(out, "done: no member document is left in %s/*/members\n", cfg.CountersCollection)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(*settle):
		}
	}
	return fmt.Errorf("member documents were still being created in %s/*/members after %d passes: "+
		"does an instance of an older release still run? Run movemembers again once none does", cfg.CountersCollection, maxPasses)
}
