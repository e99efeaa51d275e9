// Command foldshards folds, once, every shard and partial that the firestore-counter extension's
// clients and workers left in a database, into their main documents: the cut-over sweep of
// docs/migrate-from-firestore-counter.md. It is safe to run at any time and any number of times,
// also while FoldExtensionShards runs. It talks to the emulator when FIRESTORE_EMULATOR_HOST is set.
//
//	go run ./cmd/foldshards -project P [-database D] -folds 'pages/{page}:visits ...'
//
// -folds is what EXTENSION_FOLDS says (and defaults to it): only those documents and fields are folded.
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
