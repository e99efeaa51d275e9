package counter_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/testenv"
)

// TestCloseOnTheEmulatorWritesPendingGroupsAndRefusesNewIncrements: with an interval of an hour, increments
// that arrive after a counter's first write wait in its group; Close writes them at once and returns
// when each has its outcome. Every increment either was applied (nil) or was refused with ErrClosed
// (not applied), and the sum is exactly what was applied. After Close, increments are refused.
func TestCloseOnTheEmulatorWritesPendingGroupsAndRefusesNewIncrements(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 10, ShardCountCacheTTL: time.Minute, GroupCommitInterval: time.Hour})
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "likes", Delta: 1}); err != nil { // the counter's first write goes out at once
		t.Fatal(err)
	}
	applied := atomic.Int64{}
	applied.Add(1)
	var refused atomic.Int64
	var wg sync.WaitGroup
	var started sync.WaitGroup
	for i := range 50 {
		started.Add(1)
		wg.Go(func() {
			started.Done()
			_, err := store.Increments.Increment(ctx, counter.Request{Counter: "likes", Delta: int64(i + 1)})
			switch {
			case err == nil:
				applied.Add(int64(i + 1))
			case errors.Is(err, counter.ErrClosed):
				refused.Add(1)
			default:
				t.Errorf("increment: %v, want nil or ErrClosed", err)
			}
		})
	}
	started.Wait()
	time.Sleep(100 * time.Millisecond) // let most of them queue; correctness does not depend on it

	closeCtx, cancel := context.WithTimeout(ctx, 20*time.Second) // far below the hour the group would wait
	defer cancel()
	start := time.Now()
	if err := store.Increments.Close(closeCtx); err != nil {
		t.Fatalf("Close: %v (the pending group was not written at once)", err)
	}
	closed := time.Since(start)
	wg.Wait()
	sum, err := store.Reader.Sum(ctx, "likes")
	if err != nil {
		t.Fatal(err)
	}
	if sum != applied.Load() {
		t.Errorf("sum %d after Close, but %d was acknowledged", sum, applied.Load())
	}
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "likes", Delta: 1}); !errors.Is(err, counter.ErrClosed) {
		t.Errorf("increment after Close: %v, want ErrClosed", err)
	}
	t.Logf("Close returned in %s; 50 waiting increments: %d refused, the rest applied (sum %d)", closed.Round(time.Millisecond), refused.Load(), sum)
}
