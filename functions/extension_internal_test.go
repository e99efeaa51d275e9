package functions

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
)

// TestFoldExtensionShardsFoldsOnlyWhatAnEventAsksFor: an event of a shard holding an increment folds
// its main document; the events of a fold's own writes (a shard at zero, a delete) and a subject
// outside the pattern are acknowledged without a fold (the main document stays as it is, although
// shards wait); every event is acknowledged.
func TestFoldExtensionShardsFoldsOnlyWhatAnEventAsksFor(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	cfg := config.Default()
	cfg.ExtensionFoldInterval = 100 * time.Millisecond
	var logs bytes.Buffer
	s := NewService(cfg, client, cloudlog.New(&logs, slog.LevelDebug))
	const doc = "posts/p1"
	shard := client.Doc(doc).Collection(extshards.ShardsCollection).Doc("u1")
	likes := func() any {
		snap, err := client.Doc(doc).Get(ctx)
		if err != nil {
			return nil
		}
		return snap.Data()["likes"]
	}
	deliver := func(subject string, value *firestorepb.Document) {
		t.Helper()
		e := event.New()
		e.SetID(testenv.UniqueID("event"))
		e.SetType(EventFirestoreDocWritten)
		e.SetSource("//firestore.googleapis.com/projects/p/databases/(default)")
		e.SetSubject(subject)
		if err := e.SetData("application/protobuf", testenv.DocumentEventData(t, value, nil)); err != nil {
			t.Fatal(err)
		}
		if err := s.FoldExtensionShards(ctx, e); err != nil {
			t.Fatalf("event %s: %v", subject, err)
		}
	}
	int64Field := func(n int64) map[string]*firestorepb.Value {
		return map[string]*firestorepb.Value{"likes": {ValueType: &firestorepb.Value_IntegerValue{IntegerValue: n}}}
	}
	name := "projects/p/databases/(default)/documents/" + doc + "/_counter_shards_/u1"
	if _, err := shard.Set(ctx, map[string]any{"likes": firestore.Increment(3)}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	deliver("documents/"+doc+"/_counter_shards_/u1", &firestorepb.Document{Name: name, Fields: int64Field(0)})
	deliver("documents/"+doc+"/_counter_shards_/u1", nil)
	deliver("documents/"+doc, &firestorepb.Document{Name: name, Fields: int64Field(3)})
	if got := likes(); got != nil {
		t.Fatalf("likes = %v before any event asked for a fold, want none", got)
	}
	deliver("documents/"+doc+"/_counter_shards_/u1", &firestorepb.Document{Name: name, Fields: int64Field(3)})
	if got := likes(); got != int64(3) {
		t.Fatalf("likes = %v after the shard's event, want 3", got)
	}
	if !bytes.Contains(logs.Bytes(), []byte("not an extension shard document")) {
		t.Errorf("the event outside the pattern was not logged:\n%s", logs.String())
	}
}
