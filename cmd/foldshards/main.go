// Command foldshards folds, once, every shard and partial that the firestore-counter extension's
// clients and workers left in a database, into their main documents: the cut-over sweep of
// docs/migrate-from-firestore-counter.md. It is safe to run at any time and any number of times,
// also while FoldExtensionShards runs. It talks to the emulator when FIRESTORE_EMULATOR_HOST is set.
//
//	go run ./cmd/foldshards -project P [-database D]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/extshards"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "foldshards:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("foldshards", flag.ContinueOnError)
	project := flags.String("project", os.Getenv("GOOGLE_CLOUD_PROJECT"), "Google Cloud project (default $GOOGLE_CLOUD_PROJECT)")
	database := flags.String("database", "(default)", "Firestore database")
	interval := flags.Duration("interval", time.Second, "least time between two writes of one main document (EXTENSION_FOLD_INTERVAL)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *project == "" {
		return errors.New("no project: pass -project or set GOOGLE_CLOUD_PROJECT")
	}
	client, err := firestore.NewClientWithDatabase(ctx, *project, *database)
	if err != nil {
		return fmt.Errorf("firestore client: %w", err)
	}
	defer client.Close()
	docs, err := extshards.NewFolder(client, *interval).Sweep(ctx)
	fmt.Printf("folded the shards of %d documents\n", docs)
	return err
}
