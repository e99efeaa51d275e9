package functions_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/shardcount/counters/functions/config"
)

// countWindow asks Count for a window's bucket (bucket "": the current one).
func (s *testServer) countWindow(t testing.TB, id, window, bucket string) answer {
	t.Helper()
	q := url.Values{"counter": {id}, "window": {window}}
	if bucket != "" {
		q.Set("bucket", bucket)
	}
	return s.do(t, http.MethodGet, "/Count?"+q.Encode(), "", nil)
}

// TestWindowsOverHTTP: ConfigureCounter's windows make increments count in their current buckets;
// Count answers the current bucket and a named one, the roll-up holds each window's current bucket,
// and a window the counter does not count in is a 400 naming the field.
func TestWindowsOverHTTP(t *testing.T) {
	srv := newTestServer(t, config.Default())
	a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "views", "windows": []string{"day", "hour"}})
	if a.status != http.StatusCreated || a.body["num_shards"] != 10.0 {
		t.Fatalf("configure windows of a new counter: %d %s, want 201 with the default shards", a.status, a.raw)
	}
	if ws, _ := a.body["windows"].([]any); len(ws) != 2 || ws[0] != "hour" || ws[1] != "day" {
		t.Errorf("windows %v, want [hour day]", a.body["windows"])
	}
	for _, d := range []int64{3, 4, 5} {
		srv.increment(t, "views", d)
	}
	for _, w := range []string{"day", "hour"} {
		cur := srv.countWindow(t, "views", w, "")
		if cur.status != http.StatusOK || cur.body["window"] != w || cur.body["counter"] != "views" {
			t.Fatalf("count %s: %d %s", w, cur.status, cur.raw)
		}
		bucket := cur.body["bucket"].(string)
		named := srv.countWindow(t, "views", w, bucket)
		// An hour may turn between the increments and the reads: the named bucket must agree with
		// the current one, and the current day holds every increment unless midnight passed.
		if named.status != http.StatusOK || named.body["count"] != cur.body["count"] || named.body["bucket"] != bucket {
			t.Errorf("count %s bucket %s: %s, want the current bucket's %s", w, bucket, named.raw, cur.raw)
		}
		if cur.body["count"] != 12.0 {
			t.Logf("current %s bucket %s holds %v of 12 (a boundary passed?)", w, bucket, cur.body["count"])
		}
	}
	if old := srv.countWindow(t, "views", "day", "2026-01-01"); old.status != http.StatusOK || old.body["count"] != 0.0 {
		t.Errorf("a day nobody counted in: %d %s, want count 0", old.status, old.raw)
	}
	if m := srv.countWindow(t, "views", "month", ""); m.status != http.StatusBadRequest || m.body["field"] != "window" {
		t.Errorf("the current month of a counter without it: %d %s, want 400 on window", m.status, m.raw)
	}

	srv.rollUp(t, "views")
	doc, err := srv.client.Collection("rollups").Doc("views").Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	day, err := doc.DataAt("windows.day")
	if err != nil {
		t.Fatalf("roll-up %v has no windows.day: %v", doc.Data(), err)
	}
	cur := srv.countWindow(t, "views", "day", "")
	if m := day.(map[string]any); m["bucket"] != cur.body["bucket"] || m["count"] != int64(cur.body["count"].(float64)) {
		t.Errorf("roll-up windows.day %v, want bucket and count of %s", m, cur.raw)
	}
	// Windows removed: the roll-up drops them, the counted buckets stay readable by name.
	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "views", "windows": []string{}}); a.status != http.StatusOK {
		t.Fatalf("remove windows: %d %s", a.status, a.raw)
	}
	srv.increment(t, "views", 1)
	srv.rollUp(t, "views")
	if doc, err = srv.client.Collection("rollups").Doc("views").Get(t.Context()); err != nil || doc.Data()["windows"] != nil || doc.Data()["count"] != int64(13) {
		t.Errorf("roll-up after removing the windows %v (%v), want count 13 and no windows", doc.Data(), err)
	}
	if named := srv.countWindow(t, "views", "day", cur.body["bucket"].(string)); named.body["count"] != cur.body["count"] {
		t.Errorf("a counted day after its window was removed: %s, want %s", named.raw, cur.raw)
	}
}

// TestPubSubIncrementCountsInTheBucketOfItsPublishTime: a message published just before midnight
// two days ago and delivered now (a backlog, or a dead-letter replay), then delivered again, counts
// once, in the hour and day of its publish time, not in the current ones; a message published now
// counts in the current ones.
func TestPubSubIncrementCountsInTheBucketOfItsPublishTime(t *testing.T) {
	srv := newTestServer(t, config.Default())
	if a := srv.postJSON(t, http.MethodPut, "/ConfigureCounter", map[string]any{"counter": "late", "windows": []string{"hour", "day"}}); a.status != http.StatusCreated {
		t.Fatalf("configure: %d %s", a.status, a.raw)
	}
	published := time.Now().UTC().Truncate(24 * time.Hour).Add(-24*time.Hour - time.Millisecond) // 23:59:59.999, two days back
	old := pubsubMessage{data: []byte(`{"counter":"late","delta":3}`), published: published}
	for range 2 { // delivered, then redelivered
		if err := srv.deliver(t, "backlog-1", old); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.deliver(t, "fresh-1", pubsubMessage{data: []byte(`{"counter":"late","delta":4}`), published: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		window, bucket string
		want           float64
	}{
		{"day", published.Format("2006-01-02"), 3}, {"hour", published.Format("2006-01-02T15"), 3},
		{"day", published.Add(time.Millisecond).Format("2006-01-02"), 0},
	} {
		if a := srv.countWindow(t, "late", c.window, c.bucket); a.status != http.StatusOK || a.body["count"] != c.want {
			t.Errorf("%s %s: %d %s, want count %v (the message published at %s)", c.window, c.bucket, a.status, a.raw, c.want, published.Format(time.RFC3339Nano))
		}
	}
	if a := srv.countWindow(t, "late", "day", ""); a.status != http.StatusOK || a.body["count"] != 4.0 {
		t.Errorf("today: %d %s, want only the message published today (4)", a.status, a.raw)
	}
}
