package functions_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
)

// topOf asks Top and returns the answer's counters and counts, in order.
func (s *testServer) topOf(t *testing.T, query string) (answer, []string) {
	t.Helper()
	a := s.do(t, http.MethodGet, "/Top?"+query, "", nil)
	var ranked []string
	if list, ok := a.body["top"].([]any); ok {
		for _, e := range list {
			m := e.(map[string]any)
			ranked = append(ranked, fmt.Sprintf("%s=%v", m["counter"], m["count"]))
		}
	}
	return a, ranked
}

// TestTopListsRankAGroupAllTimeAndToday: counters of a group are ranked, highest first, in the
// group's all-time and day lists once their roll-ups are written; limit cuts the list; a counter
// moved to another group leaves the first list at its next refresh and joins the other's.
func TestTopListsRankAGroupAllTimeAndToday(t *testing.T) {
	cfg := config.Default()
	cfg.RollupInterval = 100 * time.Millisecond
	srv := newTestServer(t, cfg)
	counts := map[string]int64{"a": 5, "b": 9, "c": 1, "d": 7}
	for id, n := range counts {
		if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": id, "group": "posts", "windows": []string{"day"}}); a.status != http.StatusCreated || a.body["group"] != "posts" {
			t.Fatalf("configure %s: %d %s", id, a.status, a.raw)
		}
		srv.increment(t, id, n)
	}
	srv.increment(t, "outsider", 100) // in no group
	for _, id := range []string{"a", "b", "c", "d", "outsider"} {
		srv.rollUp(t, id)
	}
	a, ranked := srv.topOf(t, "group=posts")
	if a.status != http.StatusOK || a.body["group"] != "posts" || a.body["window"] != "all" || a.body["bucket"] != "" {
		t.Fatalf("top: %d %s", a.status, a.raw)
	}
	if want := "[b=9 d=7 a=5 c=1]"; fmt.Sprint(ranked) != want {
		t.Errorf("all time %v, want %s", ranked, want)
	}
	today, ranked := srv.topOf(t, "group=posts&window=day&limit=2")
	if want := "[b=9 d=7]"; today.status != http.StatusOK || fmt.Sprint(ranked) != want {
		t.Errorf("today, limit 2: %s, want %s", today.raw, want)
	}
	if b, _ := today.body["bucket"].(string); b != time.Now().UTC().Format("2006-01-02") {
		t.Logf("bucket %q (midnight passed?)", b)
	}

	// c climbs to the top, and d moves to another group, on live counters.
	srv.increment(t, "c", 20)
	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "d", "group": "drafts"}); a.status != http.StatusOK {
		t.Fatalf("move d: %d %s", a.status, a.raw)
	}
	srv.increment(t, "d", 1)
	srv.rollUp(t, "d")
	srv.rollUp(t, "c")
	if _, ranked := srv.topOf(t, "group=posts"); fmt.Sprint(ranked) != "[c=21 b=9 a=5]" {
		t.Errorf("after c climbed and d left: %v, want [c=21 b=9 a=5]", ranked)
	}
	if _, ranked := srv.topOf(t, "group=drafts"); fmt.Sprint(ranked) != "[d=8]" {
		t.Errorf("drafts: %v, want [d=8]", ranked)
	}
	if a, ranked := srv.topOf(t, "group=nobody"); a.status != http.StatusOK || len(ranked) != 0 || a.body["top"] == nil {
		t.Errorf("a group without counters: %d %s, want 200 and an empty list", a.status, a.raw)
	}
	for _, c := range []struct{ query, field string }{
		{"", "group"}, {"group=", "group"}, {"group=a/b", "group"}, {"group=posts&window=week", "window"},
		{"group=posts&limit=0", "limit"}, {"group=posts&limit=101", "limit"}, {"group=posts&limit=ten", "limit"},
		{"group=posts&group=drafts", "group"},
	} {
		if a, _ := srv.topOf(t, c.query); a.status != http.StatusBadRequest || a.body["field"] != c.field {
			t.Errorf("Top?%s: %d %s, want 400 on %s", c.query, a.status, a.raw, c.field)
		}
	}
	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "a", "group": "x/y"}); a.status != http.StatusBadRequest || a.body["field"] != "group" {
		t.Errorf("configure group x/y: %d %s, want 400 on group", a.status, a.raw)
	}
}

// TestTopListStaleness measures how far a top list lags while a group's counters are incremented and
// rolled up as their trigger would (each shard write starts a roll-up), with the default 1 s
// ROLLUP_INTERVAL: the list's age (now − updated_at) sampled every 50 ms, and the time from the last
// increment until the list holds every exact count. Both stay within a few intervals, and the
// list's commits are an interval apart (a hot document otherwise).
func TestTopListStaleness(t *testing.T) {
	cfg := config.Default()
	client, commits := testenv.FirestoreWithCommits(t)
	srv := newTestServerWithClient(t, cfg, client)
	ids := []string{"s1", "s2", "s3"}
	for _, id := range ids {
		if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": id, "group": "stale"}); a.status != http.StatusCreated {
			t.Fatalf("configure %s: %d %s", id, a.status, a.raw)
		}
	}
	ctx := t.Context()
	list := srv.client.Collection("tops").Doc("stale_all")
	var worst time.Duration
	sample := func() (time.Duration, map[string]int64) {
		snap, err := list.Get(ctx)
		if err != nil {
			return 0, nil
		}
		at, _ := snap.DataAt("updated_at")
		counts := map[string]int64{}
		top, _ := snap.DataAt("top")
		for _, e := range top.([]any) {
			m := e.(map[string]any)
			counts[m["counter"].(string)] = m["count"].(int64)
		}
		return time.Since(at.(time.Time)), counts
	}
	want := map[string]int64{}
	var rollups sync.WaitGroup
	end := time.Now().Add(5 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		id := ids[i%len(ids)]
		srv.increment(t, id, 1)
		want[id]++
		rollups.Go(func() { _ = srv.svc.RollupOnShardWrite(context.WithoutCancel(ctx), shardWritten(id, 0)) })
		if age, _ := sample(); age > worst {
			worst = age
		}
	}
	last := time.Now()
	rollups.Wait()
	var settled time.Duration
	for {
		if _, counts := sample(); fmt.Sprint(counts) == fmt.Sprint(want) {
			settled = time.Since(last)
			break
		}
		if time.Since(last) > 30*time.Second {
			t.Fatalf("the list never reached %v", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("top list of 3 counters, ROLLUP_INTERVAL %s: oldest age seen under load %s; exact %s after the last increment (%v)",
		cfg.RollupInterval, worst.Round(time.Millisecond), settled.Round(time.Millisecond), want)
	if limit := 4 * cfg.RollupInterval; worst > limit || settled > limit {
		t.Errorf("the list lagged %s under load and settled after %s, want both within %s", worst, settled, limit)
	}
	var prev time.Time
	for _, c := range commits() {
		if !slices.Contains(c.Docs, "tops/stale_all") {
			continue
		}
		if gap := c.Time.Sub(prev); gap < cfg.RollupInterval {
			t.Errorf("tops/stale_all written %s after its previous write, want at least ROLLUP_INTERVAL %s", gap, cfg.RollupInterval)
		}
		prev = c.Time
	}
}

// TestTopJustAfterABoundaryAnswersTheLatestList: a group's hour list was last refreshed 100 ms
// before the hour turned (on the lists' clock, Firestore's); asked just after, with no roll-up
// since, Top without bucket answers that list and its bucket instead of an empty list of the new
// hour, and with bucket it answers the bucket asked (empty for another than the list's).
func TestTopJustAfterABoundaryAnswersTheLatestList(t *testing.T) {
	srv := newTestServer(t, config.Default())
	hourStart := time.Now().UTC().Truncate(time.Hour)
	refreshed := hourStart.Add(-100 * time.Millisecond)
	last := refreshed.Format("2006-01-02T15")
	if _, err := srv.client.Collection("tops").Doc("posts_hour").Set(t.Context(), map[string]any{
		"group": "posts", "window": "hour", "bucket": last, "updated_at": refreshed,
		"top": []map[string]any{{"counter": "a", "count": 5}, {"counter": "b", "count": 2}},
	}); err != nil {
		t.Fatal(err)
	}
	a, ranked := srv.topOf(t, "group=posts&window=hour")
	if a.status != http.StatusOK || a.body["bucket"] != last || fmt.Sprint(ranked) != "[a=5 b=2]" || a.body["updated_at"] == nil {
		t.Errorf("Top of the hour list just after the hour turned: %d %s, want the list of %s (the latest written)", a.status, a.raw, last)
	}
	if a, ranked := srv.topOf(t, "group=posts&window=hour&bucket="+last); a.status != http.StatusOK || fmt.Sprint(ranked) != "[a=5 b=2]" {
		t.Errorf("Top of bucket %s: %d %s, want its list", last, a.status, a.raw)
	}
	current := hourStart.Format("2006-01-02T15")
	if a, ranked := srv.topOf(t, "group=posts&window=hour&bucket="+current); a.status != http.StatusOK || len(ranked) != 0 || a.body["bucket"] != current {
		t.Errorf("Top of bucket %s: %d %s, want an empty list of that bucket", current, a.status, a.raw)
	}
	for _, q := range []string{"group=posts&window=hour&bucket=2026-11-23", "group=posts&bucket=2026-11-23T10"} {
		if a, _ := srv.topOf(t, q); a.status != http.StatusBadRequest || a.body["field"] != "bucket" {
			t.Errorf("Top?%s: %d %s, want 400 on bucket", q, a.status, a.raw)
		}
	}
}

// TestADeletedCounterLeavesItsGroupsTopLists: a group of three counters with the day window is
// ranked; one is deleted while the rest of the group stays quiet (no roll-up written): the
// group's all-time and day lists no longer rank it.
func TestADeletedCounterLeavesItsGroupsTopLists(t *testing.T) {
	cfg := config.Default()
	cfg.RollupInterval = 100 * time.Millisecond
	srv := newTestServer(t, cfg)
	for id, n := range map[string]int64{"keep": 3, "gone": 9, "also": 1} {
		if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": id, "group": "quiet", "windows": []string{"day"}}); a.status != http.StatusCreated {
			t.Fatalf("configure %s: %d %s", id, a.status, a.raw)
		}
		srv.increment(t, id, n)
		srv.rollUp(t, id)
	}
	for _, q := range []string{"group=quiet", "group=quiet&window=day"} {
		if _, ranked := srv.topOf(t, q); fmt.Sprint(ranked) != "[gone=9 keep=3 also=1]" {
			t.Fatalf("%s before the delete: %v", q, ranked)
		}
	}
	if a := srv.do(t, http.MethodDelete, "/ConfigureCounter?counter=gone", "", nil); a.status != http.StatusOK {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	for _, q := range []string{"group=quiet", "group=quiet&window=day"} {
		if _, ranked := srv.topOf(t, q); fmt.Sprint(ranked) != "[keep=3 also=1]" {
			t.Errorf("%s after the delete: %v, want [keep=3 also=1]", q, ranked)
		}
	}
}
