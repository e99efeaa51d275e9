// Command removedata deletes every document of the collections the functions write, named by their
// settings, and nothing else (docs/existing-app.md); -dry-run counts them.
//
//	GOOGLE_CLOUD_PROJECT=P go run ./cmd/removedata [-database D] [-dry-run]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/firestoreflags"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "removedata:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	flags := flag.NewFlagSet("removedata", flag.ContinueOnError)
	db := firestoreflags.Add(flags, cfg.Project, cfg.Database)
	dryRun := flags.Bool("dry-run", false, "count the documents, delete nothing")
	if err := flags.Parse(args); err != nil {
		return err
	}
	client, err := db.Client(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	schema := cfg.Schema()
	verb := "deleted"
	if *dryRun {
		verb = "would delete"
	}
	for _, name := range []string{schema.Counters, schema.Sweep(), schema.Rollups, schema.Tops, schema.Dedupe} {
		bw := client.BulkWriter(ctx)
		n, err := deleteTree(ctx, client.Collection(name), bw, *dryRun)
		bw.End()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s %d documents\n", name, verb, n)
	}
	return nil
}

// deleteTree deletes every document of coll after all below it (missing parents included), unless
// dryRun, and returns how many there were.
func deleteTree(ctx context.Context, coll *firestore.CollectionRef, bw *firestore.BulkWriter, dryRun bool) (int, error) {
	n := 0
	refs := coll.DocumentRefs(ctx)
	for {
		ref, err := refs.Next()
		if errors.Is(err, iterator.Done) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("list %s: %w", coll.Path, err)
		}
		subs := ref.Collections(ctx)
		for {
			sub, err := subs.Next()
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				return n, fmt.Errorf("list the collections of %s: %w", ref.Path, err)
			}
			m, err := deleteTree(ctx, sub, bw, dryRun)
			n += m
			if err != nil {
				return n, err
			}
		}
		snap, err := ref.Get(ctx)
		if err != nil && !isNotFound(snap) {
			return n, fmt.Errorf("read %s: %w", ref.Path, err)
		}
		if !snap.Exists() {
			continue // only a parent of subcollections
		}
		n++
		if dryRun {
			continue
		}
		if _, err := bw.Delete(ref); err != nil {
			return n, fmt.Errorf("delete %s: %w", ref.Path, err)
		}
	}
}

// isNotFound says whether a failed Get found no document.
func isNotFound(snap *firestore.DocumentSnapshot) bool { return snap != nil && !snap.Exists() }
