package sources

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// TestBaseIsNotCompletedOverAMovedCounter: while one instance computes a pending base, another
// completes it and a new stamp with the same value arrives (the emulator stamps in milliseconds, at
// a write's arrival). The first instance's correction, computed before the other's landed, must not
// be added too.
func TestBaseIsNotCompletedOverAMovedCounter(t *testing.T) {
	ctx := context.Background()
	client := testenv.FirestoreOf(t, testenv.Project(t))
	schema := config.Default().Schema()
	set, err := Parse([]byte(`[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{post}"}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	instance := func() *Counting {
		return NewCounting(set, counter.NewStore(client, schema, counter.Options{DefaultNumShards: 3}), client,
			slog.New(slog.NewTextHandler(io.Discard, nil)), 0)
	}
	a, b := instance(), instance()
	for i := range 5 {
		if _, err := client.Doc(fmt.Sprintf("posts/p0/likes/u%d", i)).Set(ctx, map[string]any{"at": i}); err != nil {
			t.Fatal(err)
		}
	}
	d := set.Declarations[0]
	based := baseline{d: d, sc: scope{bound: map[string]string{"post": "p0"}}}
	if err := a.collections.CreateCollectionCounter(ctx, "likes-p0", d.Settings(), d.source()); err != nil {
		t.Fatal(err)
	}
	stamp := time.Now().Truncate(time.Millisecond)
	pending := []firestore.Update{{Path: shared.FieldBaseAt, Value: stamp}, {Path: shared.FieldBaseDone, Value: false}}
	ref := a.reader.CounterRef("likes-p0")
	if _, err := ref.Update(ctx, pending); err != nil {
		t.Fatal(err)
	}
	raced := false
	a.afterBaseValue = func() {
		if raced {
			return
		}
		raced = true
		if err := b.establishBase(ctx, "likes-p0", based, stampIfNone); err != nil {
			t.Error(err)
		}
		if _, err := ref.Update(ctx, pending); err != nil {
			t.Error(err)
		}
	}
	if err := a.establishBase(ctx, "likes-p0", based, stampIfNone); err != nil {
		t.Fatal(err)
	}
	if got, err := a.reader.Sum(ctx, "likes-p0"); err != nil || got != 5 {
		t.Errorf("likes-p0 = %d (%v), want 5: a base computed before another instance's correction landed was added too", got, err)
	}
}
