package functions_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/rollup"
)

// shardWritten is the CloudEvent a shard write of counter id sends RollupOnShardWrite.
func shardWritten(id string, n int) event.Event {
	e := event.New()
	e.SetID(fmt.Sprintf("%s-%d-%d", id, n, time.Now().UnixNano()))
	e.SetType(eventhttp.EventFirestoreDocWritten)
	e.SetSource("//firestore.googleapis.com/projects/test/databases/(default)")
	e.SetSubject("documents/counters/" + id + "/shards/0")
	return e
}

// rollUp runs RollupOnShardWrite for counter id as a trigger would.
func (s *testServer) rollUp(t testing.TB, id string) {
	t.Helper()
	if err := s.svc.RollupOnShardWrite(context.Background(), shardWritten(id, 0)); err != nil {
		t.Fatalf("roll up %s: %v", id, err)
	}
}

func TestResetAndDeleteOverHTTP(t *testing.T) {
	srv := newTestServer(t, config.Default())
	for _, d := range []int64{5, 7, 9} {
		srv.increment(t, "gone", d)
	}
	srv.rollUp(t, "gone")

	a := srv.postJSON(t, http.MethodPost, "/ConfigureCounter", map[string]any{"counter": "gone", "reset": true})
	if a.status != http.StatusOK || a.body["discarded"] != 21.0 {
		t.Fatalf("reset: %d %s, want 200 discarding 21", a.status, a.raw)
	}
	if got := srv.count(t, "gone"); got != 0 {
		t.Errorf("count after reset %d, want 0", got)
	}
	srv.increment(t, "gone", 4)
	if got := srv.count(t, "gone"); got != 4 {
		t.Errorf("count after reset and +4 is %d, want 4", got)
	}

	a = srv.do(t, http.MethodDelete, "/ConfigureCounter?counter=gone", "", nil)
	if a.status != http.StatusOK || a.body["deleted"] != true {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	if a := srv.do(t, http.MethodGet, "/Count?counter=gone", "", nil); a.status != http.StatusNotFound {
		t.Errorf("count after delete: %d %s, want 404", a.status, a.raw)
	}
	if docs := counterDocuments(t, srv); len(docs) != 0 {
		t.Errorf("documents left after delete: %v", docs)
	}
	if a := srv.do(t, http.MethodDelete, "/ConfigureCounter?counter=gone", "", nil); a.status != http.StatusNotFound {
		t.Errorf("second delete: %d %s, want 404", a.status, a.raw)
	}
	// A refresh after the delete (a late trigger event) brings nothing back.
	srv.rollUp(t, "gone")
	if docs := counterDocuments(t, srv); len(docs) != 0 {
		t.Errorf("documents after a late roll-up of a deleted counter: %v", docs)
	}
	// The ID is free again: an increment starts a new counter from zero.
	srv.increment(t, "gone", 3)
	if got := srv.count(t, "gone"); got != 3 {
		t.Errorf("count of the recreated counter %d, want 3", got)
	}
}

// raceLifecycle increments counter id from two instances (one whose shard-count cache never expires,
// so it keeps writing shards blindly through the delete) while op runs once, and sorts the acknowledged
// increments: before (answered before op was sent), after (sent after op answered), overlapping.
func raceLifecycle(t *testing.T, op func(srv *testServer) answer) (srv *testServer, before, overlapping, after int64) {
	t.Helper()
	cfg := config.Default()
	srv = newTestServer(t, cfg)
	cfg.ShardCountCacheTTL = time.Hour
	warm := newTestServerWithClient(t, cfg, srv.client)
	const id = "raced"
	srv.increment(t, id, 1)
	warm.increment(t, id, 1)
	var sent, answered atomic.Int64 // op's times, UnixNano; 0 until then
	var counts [3]atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 16 {
		inst := []*testServer{srv, warm}[g%2]
		wg.Go(func() {
			for !stop.Load() {
				start := time.Now().UnixNano()
				a := inst.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": id, "delta": 1})
				end := time.Now().UnixNano()
				if a.status != http.StatusOK {
					continue
				}
				switch s, d := sent.Load(), answered.Load(); {
				case s == 0 || end < s:
					counts[0].Add(1)
				case d != 0 && start > d:
					counts[2].Add(1)
				default:
					counts[1].Add(1)
				}
			}
		})
	}
	// Enough increments on either side of op for the race to be real; no fixed sleeps.
	awaitIncrements := func(c *atomic.Int64) {
		for deadline := time.Now().Add(30 * time.Second); c.Load() < 20; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d increments in 30 s", c.Load())
			}
		}
	}
	awaitIncrements(&counts[0])
	sent.Store(time.Now().UnixNano())
	if a := op(srv); a.status != http.StatusOK {
		t.Errorf("%d %s", a.status, a.raw)
	}
	answered.Store(time.Now().UnixNano())
	awaitIncrements(&counts[2])
	stop.Store(true)
	wg.Wait()
	t.Logf("acknowledged increments: %d before, %d overlapping, %d after", counts[0].Load(), counts[1].Load(), counts[2].Load())
	return srv, counts[0].Load() + 2, counts[1].Load(), counts[2].Load()
}

// TestDeleteWhileIncrementing: increments answered before the delete are gone with it, increments sent
// after it count in the counter that comes back (also those of an instance that still writes shards
// by its cached shard count: the roll-up their writes trigger restores the counter document), and
// those overlapping it count or not, never half.
func TestDeleteWhileIncrementing(t *testing.T) {
	srv, _, overlapping, after := raceLifecycle(t, func(srv *testServer) answer {
		return srv.do(t, http.MethodDelete, "/ConfigureCounter?counter=raced", "", nil)
	})
	srv.rollUp(t, "raced")
	got := srv.count(t, "raced")
	if got < after || got > after+overlapping {
		t.Errorf("count after the delete %d, want %d acknowledged after it plus up to %d overlapping", got, after, overlapping)
	}
}

// TestResetWhileIncrementing: as TestDeleteWhileIncrementing, for a reset to zero.
func TestResetWhileIncrementing(t *testing.T) {
	srv, _, overlapping, after := raceLifecycle(t, func(srv *testServer) answer {
		return srv.postJSON(t, http.MethodPost, "/ConfigureCounter", map[string]any{"counter": "raced", "reset": true})
	})
	got := srv.count(t, "raced")
	if got < after || got > after+overlapping {
		t.Errorf("count after the reset %d, want %d acknowledged after it plus up to %d overlapping", got, after, overlapping)
	}
	srv.rollUp(t, "raced")
	if d, err := rollup.NewStore(srv.client, config.Default().Schema()).Get(context.Background(), "raced"); err != nil || d == nil || d.Count != got {
		t.Errorf("roll-up after the reset %+v, %v; want count %d", d, err, got)
	}
}

// TestDeletedRollupDisappearsForListeners: an app listening to rollups/{id} (here through the Go
// client's snapshot listener, as the Firebase SDKs listen) sees the document go away on delete, and it
// stays away although roll-ups were being refreshed right up to the delete.
func TestDeletedRollupDisappearsForListeners(t *testing.T) {
	cfg := config.Default()
	cfg.RollupInterval = 100 * time.Millisecond
	srv := newTestServer(t, cfg)
	const id = "listened"
	srv.increment(t, id, 3)
	srv.rollUp(t, id)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	states := make(chan bool, 100) // exists, per snapshot
	go func() {
		it := srv.client.Collection("rollups").Doc(id).Snapshots(ctx)
		defer it.Stop()
		for snap, err := it.Next(); err == nil; snap, err = it.Next() {
			states <- snap.Exists()
		}
	}()
	if !<-states {
		t.Fatal("the listener did not see the roll-up")
	}
	refreshing := make(chan struct{})
	go func() { // late trigger events keep arriving through the delete
		defer close(refreshing)
		for ctx.Err() == nil {
			_ = srv.svc.RollupOnShardWrite(ctx, shardWritten(id, 1))
		}
	}()
	time.Sleep(200 * time.Millisecond)
	if a := srv.do(t, http.MethodDelete, "/ConfigureCounter?counter="+id, "", nil); a.status != http.StatusOK {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	deadline := time.After(10 * time.Second)
	for gone := false; !gone; {
		select {
		case exists := <-states:
			gone = !exists
		case <-deadline:
			t.Fatal("the listener never saw the roll-up disappear")
		}
	}
	time.Sleep(time.Second) // refreshes still running: none may bring the roll-up back
	cancel()
	<-refreshing
	select {
	case exists := <-states:
		if exists {
			t.Error("the roll-up of the deleted counter came back")
		}
	default:
	}
}

// counterDocuments lists every document of srv's database but the write records: those belong to a
// commit, not to a counter (they name none), and expire within the hour through the TTL policy.
func counterDocuments(t *testing.T, srv *testServer) []string {
	t.Helper()
	var docs []string
	for _, path := range testenv.DocumentPaths(t, srv.client) {
		if !strings.HasPrefix(path, config.Default().Schema().Dedupe+"/write-") {
			docs = append(docs, path)
		}
	}
	return docs
}
