package counter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
)

// requireExistingStore is a Store with RequireExisting, group commit on or off, over client.
func requireExistingStore(client *firestore.Client, groupCommit time.Duration) *counter.Store {
	cfg := config.Default()
	return counter.NewStore(client, cfg.Schema(), counter.Options{
		DefaultNumShards:    cfg.DefaultNumShards,
		ShardCountCacheTTL:  time.Hour, // warm caches: only the shards themselves can tell of a deletion
		GroupCommitInterval: groupCommit,
		DedupeTTL:           cfg.DedupeTTL,
		RequireExisting:     true,
	})
}

// TestRequireExistingRefusesUnknownCounters: every kind of increment of a counter that was never
// configured fails with ErrNotFound and writes nothing; Configure creates, and then they count, as
// they do on a counter whose shards are yet to be written (made by an increment that could create).
func TestRequireExistingRefusesUnknownCounters(t *testing.T) {
	client := testenv.Firestore(t)
	s := requireExistingStore(client, 0)
	ctx := context.Background()
	increments := map[string]func(id string) error{
		"delta": func(id string) error {
			_, err := s.Increments.Increment(ctx, counter.Request{Counter: id, Delta: 1})
			return err
		},
		"keyed": func(id string) error {
			_, err := s.Increments.Increment(ctx, counter.Request{Key: &counter.Key{Source: counter.SourcePubSub, ID: "m-" + id}, Counter: id, Delta: 1})
			return err
		},
		"limited": func(id string) error {
			_, err := s.Increments.Increment(ctx, counter.Request{Counter: id, Delta: 1, Caller: "alice", Limit: 1})
			return err
		},
	}
	for name, inc := range increments {
		if err := inc("unknown"); !errors.Is(err, counter.ErrNotFound) || !errors.Is(err, counter.ErrNotApplied) {
			t.Errorf("%s of an unknown counter: %v; want ErrNotFound, not applied", name, err)
		}
	}
	if paths := testenv.DocumentPaths(t, client); len(paths) != 0 {
		t.Fatalf("refused increments wrote %v", paths)
	}
	if _, err := s.Lifecycle.Configure(ctx, "known", counter.Settings{NumShards: 3}); err != nil {
		t.Fatal(err)
	}
	creating := counter.NewStore(client, config.Default().Schema(), counter.Options{DefaultNumShards: 10})
	if _, err := creating.Increments.Increment(ctx, counter.Request{Counter: "lazy", Delta: 1}); err != nil { // one shard of ten written
		t.Fatal(err)
	}
	for _, id := range []string{"known", "lazy"} {
		for range 5 {
			for name, inc := range increments {
				if err := inc(id); err != nil {
					t.Errorf("%s of %s: %v", name, id, err)
				}
			}
		}
	}
	// Five increments, one keyed increment (its key repeated), one like (its limit reached).
	if got := sum(t, s, "known"); got != 7 {
		t.Errorf("known = %d, want 7", got)
	}
	if got := sum(t, s, "lazy"); got != 8 {
		t.Errorf("lazy = %d, want 8", got)
	}
}

// TestRequireExistingNeverBringsBackADeletedCounter: instances whose caches still hold a counter
// keep incrementing it while another instance deletes it. Every increment acknowledged before the
// delete went with it; every one after is refused with ErrNotFound; and nothing of the counter is
// left (a shard written after the delete would make the roll-up restore it).
func TestRequireExistingNeverBringsBackADeletedCounter(t *testing.T) {
	client := testenv.Firestore(t)
	ctx := context.Background()
	admin := requireExistingStore(client, 0)
	if _, err := admin.Lifecycle.Configure(ctx, "doomed", counter.Settings{NumShards: 4}); err != nil {
		t.Fatal(err)
	}
	warm := []*counter.Store{requireExistingStore(client, 0), requireExistingStore(client, 50*time.Millisecond)}
	for _, s := range warm {
		for range 8 { // every shard written once: shard counts cached, shards exist
			if _, err := s.Increments.Increment(ctx, counter.Request{Counter: "doomed", Delta: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}

	incrementAcrossADelete(t, admin, "doomed", warm, func(s *counter.Store, n, g, i int) error {
		if i%2 == 0 {
			_, err := s.Increments.Increment(ctx, counter.Request{Counter: "doomed", Delta: 1})
			return err
		}
		_, err := s.Increments.Increment(ctx, counter.Request{Key: &counter.Key{Source: counter.SourceHTTP, ID: fmt.Sprintf("k-%d-%d-%d", n, g, i)}, Counter: "doomed", Delta: 1})
		return err
	})
	for _, path := range testenv.DocumentPaths(t, client) {
		if !isDedupe(path) {
			t.Errorf("%s exists after the delete; increments must not bring the counter back", path)
		}
	}
}

// incrementAcrossADelete runs inc(store, n, g, i) in four goroutines g per warm store n, i = 0, 1, ...,
// until admin has deleted counter id and each goroutine has had ten answers after it. Before the
// delete every increment must succeed; after it each is refused with ErrNotFound, except one in
// flight across it per goroutine.
func incrementAcrossADelete(t *testing.T, admin *counter.Store, id string, warm []*counter.Store, inc func(s *counter.Store, n, g, i int) error) {
	t.Helper()
	deleted := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var refusedAfter, ackedAfter int
	for n, s := range warm {
		for g := range 4 {
			wg.Go(func() {
				after := 0 // bounded: without a fence, a stale instance keeps counting
				for i := 0; after < 10; i++ {
					err := inc(s, n, g, i)
					select {
					case <-deleted:
					default:
						if err != nil {
							t.Errorf("increment before the delete: %v", err)
							return
						}
						continue
					}
					after++
					mu.Lock()
					if errors.Is(err, counter.ErrNotFound) {
						refusedAfter++
					} else {
						ackedAfter++ // sent before the delete committed, answered after
					}
					mu.Unlock()
					if err != nil && !errors.Is(err, counter.ErrNotFound) {
						t.Errorf("increment racing the delete: %v; want success or ErrNotFound", err)
					}
				}
			})
		}
	}
	time.Sleep(300 * time.Millisecond)
	if err := admin.Lifecycle.Delete(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	close(deleted)
	wg.Wait()
	t.Logf("after the delete: %d refused, %d acknowledged (in flight across it)", refusedAfter, ackedAfter)
	if goroutines := 4 * len(warm); ackedAfter > goroutines {
		t.Errorf("%d increments acknowledged after the delete, want at most the %d in flight across it", ackedAfter, goroutines)
	}
}

// isDedupe says whether path is a dedupe or write record, which outlive their counters by design.
func isDedupe(path string) bool {
	return strings.HasPrefix(path, config.Default().Schema().Dedupe+"/")
}

// TestRequireExistingCountsWindowBuckets: increments that update existing shards (RequireExisting)
// add to every window bucket, as increments that merge do, without replacing the buckets already
// on the shard.
func TestRequireExistingCountsWindowBuckets(t *testing.T) {
	client := testenv.Firestore(t)
	ctx := context.Background()
	s := requireExistingStore(client, 0)
	if _, err := s.Lifecycle.Configure(ctx, "daily", counter.Settings{NumShards: 2, Windows: []string{"hour", "day"}}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := s.Increments.Increment(ctx, counter.Request{Counter: "daily", Delta: 2}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	for _, w := range []string{"hour", "day"} {
		got, err := s.Reader.WindowCount(ctx, "daily", w, counter.Bucket(w, now))
		if err != nil {
			t.Fatal(err)
		}
		if got != 40 {
			t.Errorf("%s bucket = %d after 20 increments of 2, want 40", w, got)
		}
	}
}
