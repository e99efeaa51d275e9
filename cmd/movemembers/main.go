// Command movemembers moves the member documents of distinct counters from the collection that
// releases before counter_members used (counters/{id}/members) to counters/{id}/counter_members,
// and marks each counter so that the functions stop reading the old one: the upgrade step of
// docs/operations.md ("Upgrading"). Run it once every function runs this release. It reads
// COUNTERS_COLLECTION and SHARD_COUNT_CACHE_TTL as the functions do (functions/config), passes over
// every counter, waits until every instance has seen the marks, and passes again until a pass finds
// nothing to move. It is safe to run any number of times, also while the functions serve. It talks
// to the emulator when FIRESTORE_EMULATOR_HOST is set.
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

// maxPasses bounds the passes: the second finds only what instances created before they saw the
// marks, the third nothing.
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
	store := counter.NewStore(client, cfg.Schema(), counter.Options{DefaultNumShards: cfg.DefaultNumShards})
	for n := 1; n <= maxPasses; n++ {
		pass, err := store.MoveLegacyMembers(ctx)
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
