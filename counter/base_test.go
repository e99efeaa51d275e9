package counter_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/shared"
)

// TestBaseIsNotCompletedOverAMovedCounter: while one instance computes a pending base, another
// completes it and a new stamp with the same value arrives (the emulator stamps in milliseconds, at
// a write's arrival). The first instance's correction, computed before the other's landed, must not
// be added too.
func TestBaseIsNotCompletedOverAMovedCounter(t *testing.T) {
	ctx := context.Background()
	a, client := newStore(t)
	b := newStoreOn(client, 0)
	ref := client.Collection(config.Default().Schema().Counters).Doc("likes-p0")
	stamp := time.Now().Truncate(time.Millisecond)
	const source = "posts/{post}/likes/{like}"
	pending := []firestore.Update{{Path: shared.FieldSource, Value: source}, {Path: shared.FieldBaseAt, Value: stamp}, {Path: shared.FieldBaseDone, Value: false}}
	documents := func(context.Context, time.Time) (int64, error) { return 5, nil }
	if _, err := newStoreOn(client, 0).Configure(ctx, "likes-p0", counter.Settings{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Update(ctx, pending); err != nil {
		t.Fatal(err)
	}
	raced := false
	racing := counter.Baseline{Source: source, ValueAt: func(ctx context.Context, at time.Time) (int64, error) {
		if !raced {
			raced = true
			if err := b.EstablishBase(ctx, "likes-p0", counter.Baseline{Source: source, ValueAt: documents}); err != nil {
				return 0, err
			}
			if _, err := ref.Update(ctx, pending); err != nil {
				return 0, err
			}
		}
		return documents(ctx, at)
	}}
	if err := a.EstablishBase(ctx, "likes-p0", racing); err != nil {
		t.Fatal(err)
	}
	if got := sum(t, a, "likes-p0"); got != 5 {
		t.Errorf("likes-p0 = %d, want 5: a base computed before another instance's correction landed was added too", got)
	}
}
