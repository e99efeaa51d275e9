package counter_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// The examples need Firestore (or its emulator, through FIRESTORE_EMULATOR_HOST): they are compiled,
// not run.

func ExampleNewStore() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "my-project")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	schema := shared.Schema{Counters: "counters", Rollups: "rollups", Dedupe: "counter_dedupe"}
	store := counter.NewStore(client, schema, counter.Options{
		DefaultNumShards:    10,
		ShardCountCacheTTL:  time.Minute,
		GroupCommitInterval: 125 * time.Millisecond,
		DedupeTTL:           24 * time.Hour,
	})
	// Close sees held increments through, e.g. on SIGTERM.
	defer store.Increments.Close(ctx)
}

func ExampleIncrements_Increment() {
	ctx := context.Background()
	var increments *counter.Increments // counter.NewStore(...).Increments
	res, err := increments.Increment(ctx, counter.Request{Counter: "likes-post-42", Delta: 1})
	switch {
	case errors.Is(err, counter.ErrNotApplied):
		fmt.Println("not applied: safe to send again")
	case errors.Is(err, counter.ErrOutcomeUnknown):
		fmt.Println("may or may not have been applied")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("added to shard", res.Applied[0].Shard)
	}
}

func ExampleIncrements_Increment_keyed() {
	ctx := context.Background()
	var increments *counter.Increments // counter.NewStore(...).Increments
	key := counter.Key{Source: counter.SourceHTTP, ID: "request-7f3a"}
	incs := []wire.Increment{{Counter: "likes-post-42", Delta: 1}, {Counter: "likes-total", Delta: 1}}
	// Sending the same key again, however often, applies the increments once.
	out, err := increments.Increment(ctx, counter.Request{Key: &key, Batch: incs})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("duplicate:", out.Duplicate, "applied:", out.Applied)
}

func ExampleReader_Value() {
	ctx := context.Background()
	var reader *counter.Reader // counter.NewStore(...).Reader
	v, err := reader.Value(ctx, "likes-post-42")
	if errors.Is(err, counter.ErrNotFound) {
		fmt.Println("no such counter")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Count, "over", v.NumShards, "shards")
}
