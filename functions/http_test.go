package functions_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/functions/config"
)

func TestIncrementCreatesCounterAndCountSumsIt(t *testing.T) {
	srv := newTestServer(t, config.Default())
	a := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "likes"})
	if a.status != http.StatusOK {
		t.Fatalf("increment: %d %s", a.status, a.raw)
	}
	if a.body["counter"] != "likes" || a.body["delta"] != 1.0 {
		t.Errorf("answer %s, want counter likes and the default delta 1", a.raw)
	}
	if shard := a.body["shard"].(float64); shard < 0 || shard >= 10 {
		t.Errorf("shard %v outside the default 10 shards", shard)
	}
	srv.increment(t, "likes", 41)
	srv.increment(t, "likes", -2)

	c := srv.do(t, http.MethodGet, "/Count?counter=likes", "", nil)
	if c.status != http.StatusOK || c.body["count"] != 40.0 || c.body["num_shards"] != 10.0 {
		t.Fatalf("count: %d %s, want count 40 over 10 shards", c.status, c.raw)
	}
	if c.body["rollup"] != nil {
		t.Errorf("rollup %v before any roll-up ran, want null", c.body["rollup"])
	}
	if head := srv.do(t, http.MethodHead, "/Count?counter=likes", "", nil); head.status != http.StatusOK {
		t.Errorf("HEAD: %d", head.status)
	}
}

func TestConfigureCreatesThenReshardsKeepingTheValue(t *testing.T) {
	srv := newTestServer(t, config.Default())
	a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "views", "num_shards": 4})
	if a.status != http.StatusCreated || a.body["created"] != true || a.body["num_shards"] != 4.0 {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	shards, err := srv.client.Collection("counters").Doc("views").Collection("shards").Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 4 {
		t.Fatalf("%d shard documents, want 4 zeroed shards", len(shards))
	}
	for _, s := range shards {
		if s.Data()["count"] != int64(0) {
			t.Errorf("shard %s = %v, want count 0", s.Ref.ID, s.Data())
		}
	}
	srv.increment(t, "views", 7)
	a = srv.postJSON(t, http.MethodPost, "/ConfigureCounter", map[string]any{"counter": "views", "num_shards": 2})
	if a.status != http.StatusOK || a.body["created"] != false || a.body["previous_num_shards"] != 4.0 {
		t.Fatalf("reshard: %d %s", a.status, a.raw)
	}
	if got := srv.count(t, "views"); got != 7 {
		t.Errorf("count after resharding 4 -> 2 is %d, want 7", got)
	}
}

// TestConcurrentIncrementsAreExact: 2,000 increments from 50 goroutines across 3 counters, every one
// acknowledged, sum exactly.
func TestConcurrentIncrementsAreExact(t *testing.T) {
	srv := newTestServer(t, config.Default())
	counters := []string{"likes", "views", "favourites"}
	const goroutines, total = 50, 2000
	var expected [3]atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := g; i < total; i += goroutines {
				c := i % len(counters)
				delta := int64(rand.IntN(9) + 1)
				srv.increment(t, counters[c], delta)
				expected[c].Add(delta)
			}
		})
	}
	wg.Wait()
	for c, id := range counters {
		if got, want := srv.count(t, id), expected[c].Load(); got != want {
			t.Errorf("%s: count %d, want %d", id, got, want)
		}
	}
}

// TestReshardingWhileIncrementingLosesNothing changes the shard count up and down while 50 goroutines
// increment through instances whose cached shard counts go stale at different times.
func TestReshardingWhileIncrementingLosesNothing(t *testing.T) {
	cfg := config.Default()
	cfg.ShardCountCacheTTL = 20 * time.Millisecond
	first := newTestServer(t, cfg)
	cfg.ShardCountCacheTTL = time.Hour // an instance that never notices the reshards
	second := newTestServerWithClient(t, cfg, first.client)
	instances := []*testServer{first, second}

	const id = "reshard"
	first.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": id, "num_shards": 5})
	var expected atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 50 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				first.increment(t, id, 1) // warm both caches' view of the counter evenly
				instances[g%2].increment(t, id, 2)
				expected.Add(3)
			}
		})
	}
	for _, n := range []int{20, 2, 50, 1, 10} {
		time.Sleep(150 * time.Millisecond)
		if a := first.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": id, "num_shards": n}); a.status != http.StatusOK {
			t.Errorf("reshard to %d: %d %s", n, a.status, a.raw)
		}
	}
	close(stop)
	wg.Wait()
	if expected.Load() < 300 {
		t.Fatalf("only %d increments ran during the reshards; the test proves nothing", expected.Load())
	}
	a := first.do(t, http.MethodGet, "/Count?counter="+id, "", nil)
	if got := int64(a.body["count"].(float64)); got != expected.Load() || a.body["num_shards"] != 10.0 {
		t.Errorf("after resharding: %s, want count %d over 10 shards", a.raw, expected.Load())
	}
}

// TestFirstIncrementsCreateTheCounterOnce races new-counter creation from many goroutines.
func TestFirstIncrementsCreateTheCounterOnce(t *testing.T) {
	srv := newTestServer(t, config.Default())
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() { srv.increment(t, "new", 1) })
	}
	wg.Wait()
	a := srv.do(t, http.MethodGet, "/Count?counter=new", "", nil)
	if a.body["count"] != 30.0 || a.body["num_shards"] != 10.0 {
		t.Errorf("count %s, want 30 over the default 10 shards", a.raw)
	}
}

func TestDatabaseFailuresAnswer503Or500WithoutDetails(t *testing.T) {
	t.Run("unavailable database is 503 with Retry-After", func(t *testing.T) {
		t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1") // nothing listens there
		client, err := firestore.NewClient(context.Background(), "unreachable")
		if err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		cfg.RequestTimeout = 300 * time.Millisecond
		srv := newTestServerWithClient(t, cfg, client)
		a := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "a"})
		if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
			t.Fatalf("%d (Retry-After %q) %s, want 503 with Retry-After", a.status, a.header.Get("Retry-After"), a.raw)
		}
	})
	t.Run("corrupt counter document is 500 without internals", func(t *testing.T) {
		srv := newTestServer(t, config.Default())
		if _, err := srv.client.Collection("counters").Doc("broken").Set(context.Background(), map[string]any{"num_shards": "many"}); err != nil {
			t.Fatal(err)
		}
		a := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "broken"})
		if a.status != http.StatusInternalServerError || a.body["error"] != "internal error" {
			t.Fatalf("%d %s, want 500 internal error", a.status, a.raw)
		}
		if !bytesContains(srv.logs.String(), `"severity":"ERROR"`, "num_shards") {
			t.Errorf("the failure was not logged at ERROR with its cause: %s", srv.logs)
		}
	})
}
