// Command foldshards folds every extension shard left in a database once: the cut-over sweep of
// docs/migrate-from-firestore-counter.md. Safe to rerun, also alongside FoldExtensionShards.
//
//	go run ./cmd/foldshards -project P [-database D] -folds "$EXTENSION_FOLDS"
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/internal/firestoreflags"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "foldshards:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("foldshards", flag.ContinueOnError)
	db := firestoreflags.Add(flags, os.Getenv("GOOGLE_CLOUD_PROJECT"), "(default)")
	interval := flags.Duration("interval", time.Second, "least time between two writes of one main document (EXTENSION_FOLD_INTERVAL)")
	folds := flags.String("folds", os.Getenv("EXTENSION_FOLDS"), "the documents and fields to fold, as EXTENSION_FOLDS says")
	if err := flags.Parse(args); err != nil {
		return err
	}
	targets, err := extshards.ParseTargets(*folds)
	if err != nil {
		return fmt.Errorf("-folds: %w", err)
	}
	if len(targets) == 0 {
		return fmt.Errorf("-folds (or EXTENSION_FOLDS) names nothing to fold")
	}
	client, err := db.Client(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	docs, err := extshards.NewFolder(client, *interval, targets).Sweep(ctx)
	fmt.Printf("folded the shards of %d documents\n", docs)
	return err
}
