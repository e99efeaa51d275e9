package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
)

// interval is the stack's roll-up interval (ROLLUP_INTERVAL's default).
var interval = config.Default().RollupInterval

var schema = config.Default().Schema()

// readRollup reads a roll-up document straight from Firestore; nil when there is none.
func readRollup(t testing.TB, stack *stack, id string) *rollup.Document {
	t.Helper()
	d, err := rollup.NewStore(stack.Client, schema).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRollupUnderSustainedLoad drives three counters for five seconds through the stack's Increment
// while the Firestore emulator's events reach RollupOnShardWrite, and checks the roll-up's promises:
// at most one write per interval, never more than about two intervals behind during the load, and
// exact within about two intervals after it, without any scheduler.
func TestRollupUnderSustainedLoad(t *testing.T) {
	stack := newStack(t)
	ids := []string{testenv.UniqueID("load-a"), testenv.UniqueID("load-b"), testenv.UniqueID("load-c")}
	const clients, duration = 32, 5 * time.Second

	var acked [3]atomic.Int64
	var maxAge [3]atomic.Int64 // the oldest roll-up seen during the load, in ns
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(duration)
	for c := range clients {
		wg.Go(func() {
			for i := c; time.Now().Before(stop); i++ {
				k := i % len(ids)
				if err := increment(stack, ids[k], 1); err != nil {
					t.Error(err)
					return
				}
				acked[k].Add(1)
			}
		})
	}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for time.Now().Before(stop) {
			time.Sleep(100 * time.Millisecond)
			for k, id := range ids {
				if d := readRollup(t, stack, id); d != nil {
					age := time.Since(d.UpdatedAt)
					if age > time.Duration(maxAge[k].Load()) {
						maxAge[k].Store(int64(age))
					}
				}
			}
		}
	}()
	wg.Wait()
	<-sampled
	loadEnd := time.Now()

	total := int64(0)
	for k, id := range ids {
		want := acked[k].Load()
		total += want
		converged := waitFor(t, 30*time.Second, "roll-up of "+id+" exact", func() bool {
			d := readRollup(t, stack, id)
			return d != nil && d.Count == want
		})
		final := readRollup(t, stack, id)
		elapsed := time.Since(start)
		budget := int64(elapsed/interval) + 1
		t.Logf("%s: %d increments acknowledged; roll-up exact %s after the load stopped; %d roll-up writes in %s (budget %d, %.2f writes/s); oldest roll-up during the load %s",
			id, want, converged.Round(time.Millisecond), final.Revision, elapsed.Round(time.Millisecond), budget,
			float64(final.Revision)/elapsed.Seconds(), time.Duration(maxAge[k].Load()).Round(time.Millisecond))
		if final.Revision > budget {
			t.Errorf("%s: %d roll-up writes in %s, over the budget of one per %s plus one (%d)", id, final.Revision, elapsed, interval, budget)
		}
		// Trailing edge: two intervals, plus slack for a loaded two-core machine delivering queued events.
		if bound := 2*interval + 2*time.Second; time.Since(loadEnd) > bound+30*time.Millisecond && converged > bound {
			t.Errorf("%s: roll-up exact only %s after the load stopped, beyond about two intervals (%s)", id, converged, bound)
		}
		if age := time.Duration(maxAge[k].Load()); age > 2*interval+time.Second {
			t.Errorf("%s: roll-up %s old during the load, more than about two intervals", id, age)
		}
	}
	t.Logf("load: %d increments in %s (%.0f/s) from %d clients", total, loadEnd.Sub(start).Round(time.Millisecond), float64(total)/loadEnd.Sub(start).Seconds(), clients)

	// Roll-up writes trigger nothing: once every event of the load is handled (a late one may still
	// write once, when its shard write and the last roll-up are too close to call), the roll-ups stay put.
	waitFor(t, time.Minute, "all Firestore events delivered", func() bool { return eventsIdle(t, stack) })
	before := make([]int64, len(ids))
	for k, id := range ids {
		before[k] = readRollup(t, stack, id).Revision
	}
	time.Sleep(3 * interval)
	for k, id := range ids {
		if d := readRollup(t, stack, id); d.Revision != before[k] || d.Count != acked[k].Load() {
			t.Errorf("%s: roll-up changed with no increments (revision %d -> %d, count %d): roll-up writes must not trigger roll-ups", id, before[k], d.Revision, d.Count)
		}
	}
}

// postShardEvent delivers a document-written CloudEvent for a shard of counter id straight to the
// function, in binary mode as Eventarc does, with the given event ID.
func postShardEvent(stack *stack, subject, eventID string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, stack.FunctionsURL+"/"+functions.EntryRollupOnShardWrite, bytes.NewReader(nil))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/protobuf")
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Type", eventhttp.EventFirestoreDocWritten)
	req.Header.Set("Ce-Source", "//firestore.googleapis.com/projects/demo/databases/(default)")
	req.Header.Set("Ce-Id", eventID)
	req.Header.Set("Ce-Subject", subject)
	req.Header.Set("Ce-Time", time.Now().UTC().Format(time.RFC3339Nano))
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestDuplicatedAndReorderedEventsAreHarmless replays a counter's shard events many times, shuffled
// and concurrently, next to the real ones: the roll-up ends exact, within its write budget.
func TestDuplicatedAndReorderedEventsAreHarmless(t *testing.T) {
	stack := newStack(t)
	id := testenv.UniqueID("replayed")
	start := time.Now()
	var events []string
	for n := range 20 {
		if err := increment(stack, id, int64(n+1)); err != nil {
			t.Fatal(err)
		}
		// Each shard event, with its own ID, delivered three times.
		subject := fmt.Sprintf("documents/%s/%s/%s/%d", schema.Counters, id, shared.ShardsCollection, n%10)
		eventID := uuid.NewString()
		events = append(events, subject+" "+eventID, subject+" "+eventID, subject+" "+eventID)
	}
	rand.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	var wg sync.WaitGroup
	for i, e := range events {
		var subject, eventID string
		fmt.Sscan(e, &subject, &eventID)
		wg.Go(func() {
			time.Sleep(time.Duration(i%7) * 50 * time.Millisecond) // spread over a few intervals
			if status, err := postShardEvent(stack, subject, eventID); err != nil || status/100 != 2 {
				t.Errorf("replayed event: %d %v", status, err)
			}
		})
	}
	wg.Wait()
	const want = 20 * 21 / 2
	waitFor(t, 10*time.Second, "roll-up exact", func() bool {
		d := readRollup(t, stack, id)
		return d != nil && d.Count == want
	})
	elapsed := time.Since(start)
	if d := readRollup(t, stack, id); d.Revision > int64(elapsed/interval)+1 {
		t.Errorf("%d roll-up writes for %d events in %s: duplicates were not absorbed", d.Revision, len(events)+20, elapsed)
	}
	if d := count(t, stack, id); d.Count != want || d.Rollup == nil || d.Rollup.Count != want {
		t.Errorf("Count %+v, want %d exact and rolled up", d, want)
	}
}

// TestEventForNoShardIsAcknowledgedAndLogged: an event whose subject names no shard can never
// succeed, so it is acknowledged (no retry storm) and logged at ERROR.
func TestEventForNoShardIsAcknowledgedAndLogged(t *testing.T) {
	stack := newStack(t)
	eventID := uuid.NewString()
	status, err := postShardEvent(stack, "documents/elsewhere/x", eventID)
	if err != nil || status/100 != 2 {
		t.Fatalf("event for no shard answered %d %v, want 2xx", status, err)
	}
	waitFor(t, 5*time.Second, "ERROR log naming the event", func() bool {
		return len(stack.Logs(t, `"severity":"ERROR"`, eventID)) > 0
	})
}

// TestFailingRollupNeverBlocksIncrements breaks a counter's roll-up document: roll-ups of it fail
// (acknowledged and logged at ERROR, since a retry cannot fix it), while increments and exact counts
// carry on.
func TestFailingRollupNeverBlocksIncrements(t *testing.T) {
	stack := newStack(t)
	id := testenv.UniqueID("broken-rollup")
	if _, err := schema.RollupRef(stack.Client, id).Set(context.Background(), map[string]any{shared.FieldUpdatedAt: "not a time"}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := increment(stack, id, 2); err != nil {
			t.Fatalf("increment with a broken roll-up: %v", err)
		}
	}
	if got := count(t, stack, id).Count; got != 10 {
		t.Errorf("exact count %d, want 10", got)
	}
	waitFor(t, 10*time.Second, "roll-up failure logged at ERROR", func() bool {
		lines := stack.Logs(t, `"severity":"ERROR"`, id)
		return slices.ContainsFunc(lines, func(l string) bool { return bytes.Contains([]byte(l), []byte("roll up")) })
	})
}
