package rollup_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
)

// ranked is a top list as "counter=count" in order.
func ranked(t *testing.T, client *firestore.Client, group, window string) string {
	t.Helper()
	bucket := ""
	if window != shared.TopWindowAll {
		bucket = counter.Bucket(window, time.Now())
	}
	l, err := rollup.NewStore(client, schema).Top(context.Background(), group, window, bucket)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, e := range l.Top {
		s = append(s, fmt.Sprintf("%s=%d", e.Counter, e.Count))
	}
	return fmt.Sprint(s)
}

// configureGroup puts counter id in group g ("" for none) through store.
func configureGroup(t *testing.T, store *counter.Store, id, g string, windows ...string) {
	t.Helper()
	st := counter.Settings{Group: &g}
	if windows != nil {
		st.Windows = windows
	}
	if _, err := store.Lifecycle.Configure(context.Background(), id, st); err != nil {
		t.Fatal(err)
	}
}

// ageTouches moves every counter's touched stamp and the sweep's progress an hour back and to
// now: a sweep then sees only counters stamped from now on.
func ageTouches(t *testing.T, client *firestore.Client, ids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		if _, err := schema.CounterRef(client, id).Update(ctx, []firestore.Update{{Path: shared.FieldTouchedMinute, Value: shared.UnixMinute(time.Now().Add(-time.Hour))}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := schema.SweepStateRef(client).Set(ctx, map[string]any{"from_minute": shared.UnixMinute(time.Now()) - 1}); err != nil {
		t.Fatal(err)
	}
}

// TestTopListsFollowAGroupChangeWithoutAnIncrement: counters moved to another group, or out of
// every group, by one instance leave the old lists and join the new ones at another instance's next
// sweep, with no increment, and at its next roll-up of the moved counter alone (no other member of
// the old group rolled up).
func TestTopListsFollowAGroupChangeWithoutAnIncrement(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	admin, warm := newCounters(client), newCounters(client) // two instances
	engine := rollup.NewEngine(client, schema, warm, 50*time.Millisecond)
	for id, n := range map[string]int64{"a": 5, "b": 3, "c": 2} {
		configureGroup(t, admin, id, "posts", counter.WindowDay)
		if _, err := warm.Increments.Increment(ctx, counter.Request{Counter: id, Delta: n}); err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Refresh(ctx, id, time.Now(), rollup.SourceTrigger); err != nil {
			t.Fatal(err)
		}
	}
	if got := ranked(t, client, "posts", shared.TopWindowAll); got != "[a=5 b=3 c=2]" {
		t.Fatalf("posts before the moves: %s", got)
	}
	ageTouches(t, client, "a", "b", "c")

	configureGroup(t, admin, "a", "drafts")
	configureGroup(t, admin, "b", "")
	res, err := engine.Sweep(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sweep after the moves: %+v", res)
	for _, c := range []struct{ group, window, want string }{
		{"posts", shared.TopWindowAll, "[c=2]"}, {"posts", counter.WindowDay, "[c=2]"},
		{"drafts", shared.TopWindowAll, "[a=5]"}, {"drafts", counter.WindowDay, "[a=5]"},
	} {
		if got := ranked(t, client, c.group, c.window); got != c.want {
			t.Errorf("%s %s after a moved to drafts and b out of every group, and a sweep: %s, want %s", c.group, c.window, got, c.want)
		}
	}

	// The roll-up of a moved counter refreshes the group it left, with no other member's roll-up.
	configureGroup(t, admin, "c", "drafts")
	if _, err := warm.Increments.Increment(ctx, counter.Request{Counter: "c", Delta: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Refresh(ctx, "c", time.Now(), rollup.SourceTrigger); err != nil {
		t.Fatal(err)
	}
	if got := ranked(t, client, "posts", shared.TopWindowAll); got != "[]" {
		t.Errorf("posts after c moved and rolled up: %s, want []", got)
	}
	if got := ranked(t, client, "drafts", shared.TopWindowAll); got != "[c=12 a=5]" {
		t.Errorf("drafts after c moved and rolled up: %s, want [c=12 a=5]", got)
	}
}

// TestSweepRetriesATopListRefreshThatFailed: a roll-up is written but its top list refresh fails
// (every call naming the list is cut); the sweep that follows finds the list behind the roll-up
// though the count is right, saves its progress even while the list still fails, and refreshes it
// once Firestore answers again.
func TestSweepRetriesATopListRefreshThatFailed(t *testing.T) {
	ctx := context.Background()
	ff := testenv.FirestoreBehindFaultProxy(t)
	store := newCounters(ff.Client)
	engine := rollup.NewEngine(ff.Client, schema, store, 50*time.Millisecond)
	configureGroup(t, store, "a", "posts")
	configureGroup(t, store, "b", "posts")
	for id, n := range map[string]int64{"a": 1, "b": 2} {
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: id, Delta: n}); err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Refresh(ctx, id, time.Now(), rollup.SourceTrigger); err != nil {
			t.Fatal(err)
		}
	}
	if got := ranked(t, ff.Direct, "posts", shared.TopWindowAll); got != "[b=2 a=1]" {
		t.Fatalf("posts: %s", got)
	}

	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "a", Delta: 5}); err != nil {
		t.Fatal(err)
	}
	cut := faultproxy.Faults{ResetRate: 1, Match: []byte(schema.Tops + "/posts_")}
	ff.Proxy.SetFaults(cut)
	_, err := engine.Refresh(ctx, "a", time.Now(), rollup.SourceTrigger)
	t.Logf("refresh while the list is cut: %v", err)
	if d := readRollup(t, ff.Direct, "a"); d == nil || d.Count != 6 {
		t.Fatalf("roll-up of a %+v, want 6 (only the list is cut)", d)
	}
	if got := ranked(t, ff.Direct, "posts", shared.TopWindowAll); got != "[b=2 a=1]" {
		t.Fatalf("posts after the cut refresh: %s, want the list as before", got)
	}

	// Still cut: the sweep reports the list, and saves its progress all the same.
	first, err := engine.Sweep(ctx, time.Hour)
	t.Logf("sweep while the list is cut: %+v, %v", first, err)
	if !first.Done {
		t.Errorf("sweep while a top list fails: %+v, want done (its progress saved)", first)
	}
	if snap, err := schema.SweepStateRef(ff.Direct).Get(ctx); err != nil || snap.Data()["pass_minute"] != nil && snap.Data()["pass_minute"] != int64(0) {
		t.Errorf("sweep state after a failing list: %v, %v; want a finished pass", snap.Data(), err)
	}

	ff.Proxy.SetFaults(faultproxy.Faults{})
	second, err := engine.Sweep(ctx, time.Hour)
	t.Logf("sweep once the list answers: %+v, %v", second, err)
	if err != nil {
		t.Fatal(err)
	}
	if got := ranked(t, ff.Direct, "posts", shared.TopWindowAll); got != "[a=6 b=2]" {
		t.Errorf("posts after the sweep: %s, want [a=6 b=2]", got)
	}
}

// TestABurstOfRollupsInAGroupRanksItAtMostTwice: roll-ups of 12 counters of one group written at
// once by one engine rank the group (the query of up to 100 roll-ups) at most twice, one refresh
// and its follow-up, and the list then ranks them all.
func TestABurstOfRollupsInAGroupRanksItAtMostTwice(t *testing.T) {
	ctx := context.Background()
	var writes, reads testenv.LogBuffer
	client := testenv.FirestoreRecording(t, &writes, &reads)
	store := newCounters(client)
	engine := rollup.NewEngine(client, schema, store, time.Second)
	const n = 12
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("c%02d", i))
		configureGroup(t, store, ids[i], "posts")
	}
	// burst increments every counter by its number plus one and rolls them all up at once.
	burst := func() {
		var wg sync.WaitGroup
		for i, id := range ids {
			if _, err := store.Increments.Increment(ctx, counter.Request{Counter: id, Delta: int64(i + 1)}); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				if _, err := engine.Refresh(ctx, id, time.Now(), rollup.SourceTrigger); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	// lines are the documents of each line of log.
	lines := func(log *testenv.LogBuffer) [][]string {
		time.Sleep(100 * time.Millisecond) // a read is logged just after its stream ends
		var docs [][]string
		for _, line := range log.Lines(t) {
			var d []string
			for _, doc := range line["docs"].([]any) {
				d = append(d, doc.(string))
			}
			docs = append(docs, d)
		}
		return docs
	}
	burst() // the first roll-ups, read back after their transactions
	readsBefore, writesBefore := len(lines(&reads)), len(lines(&writes))
	burst()
	// A ranking returns every roll-up of the group, and nothing else does.
	notRollup := func(doc string) bool { return !strings.HasPrefix(doc, schema.Rollups+"/") }
	rankings := 0
	for _, docs := range lines(&reads)[readsBefore:] {
		if len(docs) == n && !slices.ContainsFunc(docs, notRollup) {
			rankings++
		}
	}
	listWrites := 0
	for _, docs := range lines(&writes)[writesBefore:] {
		if slices.Contains(docs, schema.Tops+"/posts_"+shared.TopWindowAll) {
			listWrites++
		}
	}
	t.Logf("second burst of %d roll-ups: %d rankings, %d list writes", n, rankings, listWrites)
	if rankings == 0 || rankings > 2 {
		t.Errorf("second burst of %d roll-ups in one group ranked it %d times, want 1 or 2", n, rankings)
	}
	want := "[c11=24 c10=22 c09=20 c08=18 c07=16 c06=14 c05=12 c04=10 c03=8 c02=6 c01=4 c00=2]"
	if got := ranked(t, client, "posts", shared.TopWindowAll); got != want {
		t.Errorf("posts after the bursts: %s, want %s", got, want)
	}
}
