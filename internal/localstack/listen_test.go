package localstack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/testenv"
)

// receivedEvent is one delivery a test function received: its headers and DocumentEventData fields.
type receivedEvent struct {
	header          http.Header
	value, oldValue *firestorepb.Document
	updateMask      []string
}

// TestWatchDeliversEventarcDocumentEvents writes, updates and deletes documents on the Firestore
// emulator and checks the events the bridge delivers, as Eventarc's: one per write of a document
// the pattern matches (none for another collection of the same ID), binary mode with the subject,
// source, time and document; value after the write (absent on a delete), old_value before it (absent
// on a create), and update_mask on an update.
func TestWatchDeliversEventarcDocumentEvents(t *testing.T) {
	host := testenv.FirestoreEmulatorHost(t)
	project := testenv.NewProjectID()
	client := testenv.FirestoreOf(t, project)
	ctx := context.Background()

	var mu sync.Mutex
	var got []receivedEvent
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e := decodeEvent(t, body)
		e.header = r.Header
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	}))
	defer fn.Close()
	b, err := startEventBridge(io.Discard, "127.0.0.1:0", 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.stop()
	api, err := dialFirestore(ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	b.firestore = api
	if err := b.watchTriggerDocuments(b.watching, api, databaseName(project, "(default)"), "google.cloud.firestore.document.v1.written", "counters/{counter}/shards/{shard}", fn.URL, false); err != nil {
		t.Fatal(err)
	}
	// Each step waits for the events before it: a document's first write is found by the watch's
	// next query, and writes of one document close together may make one event (docs/development.md).
	wait := func(n int) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			have := len(got)
			mu.Unlock()
			if have >= n || time.Now().After(deadline) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	shard := client.Doc("counters/likes/shards/3")
	steps := []func() error{
		func() error { _, err := shard.Set(ctx, map[string]any{"count": 1}); return err },
		func() error {
			_, err := shard.Set(ctx, map[string]any{"count": firestore.Increment(2), "writes": 1}, firestore.MergeAll)
			return err
		},
		func() error { _, err := client.Doc("apps/x/shards/1").Set(ctx, map[string]any{"count": 1}); return err },
		func() error { _, err := shard.Delete(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		wait([]int{1, 2, 2, 3}[i]) // apps/x/shards/1 makes none
	}
	time.Sleep(time.Second) // any event beyond the three
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d events delivered, want 3 (create, update, delete of counters/likes/shards/3, none for apps/x/shards/1)", len(got))
	}
	// Deliveries run in parallel, as Eventarc's do: put them in the order of the writes.
	slices.SortFunc(got, func(a, b receivedEvent) int { return order(a) - order(b) })
	create, update, del := got[0], got[1], got[2]
	for _, e := range got {
		for k, want := range map[string]string{
			"Content-Type": "application/protobuf", "Ce-Specversion": "1.0", "Ce-Type": "google.cloud.firestore.document.v1.written",
			"Ce-Source": "//firestore.googleapis.com/projects/" + project + "/databases/(default)", "Ce-Subject": "documents/counters/likes/shards/3",
			"Ce-Document": "counters/likes/shards/3", "Ce-Project": project, "Ce-Database": "(default)",
		} {
			if e.header.Get(k) != want {
				t.Errorf("header %s: %q, want %q", k, e.header.Get(k), want)
			}
		}
		if e.header.Get("Ce-Id") == "" || e.header.Get("Ce-Datacontenttype") != "" {
			t.Errorf("ce-id %q, ce-datacontenttype %q: want an ID and no datacontenttype (binary mode)", e.header.Get("Ce-Id"), e.header.Get("Ce-Datacontenttype"))
		}
	}
	if create.value == nil || create.oldValue != nil || count(create.value) != 1 {
		t.Errorf("create: value %v, old_value %v; want count 1 and no old_value", create.value, create.oldValue)
	}
	if update.value == nil || update.oldValue == nil || count(update.value) != 3 || count(update.oldValue) != 1 ||
		!slices.Equal(update.updateMask, []string{"count", "writes"}) {
		t.Errorf("update: value %v, old_value %v, update_mask %v; want count 3, count 1, [count writes]", update.value, update.oldValue, update.updateMask)
	}
	if when, err := time.Parse(time.RFC3339Nano, update.header.Get("Ce-Time")); err != nil || !when.Equal(update.value.GetUpdateTime().AsTime()) {
		t.Errorf("update: ce-time %q, want the update time %v", update.header.Get("Ce-Time"), update.value.GetUpdateTime().AsTime())
	}
	if del.value != nil || del.oldValue == nil || count(del.oldValue) != 3 {
		t.Errorf("delete: value %v, old_value %v; want no value and old_value count 3", del.value, del.oldValue)
	}
}

// order ranks an event of the test's writes: create, update, delete.
func order(e receivedEvent) int {
	switch {
	case e.oldValue == nil:
		return 0
	case e.value != nil:
		return 1
	}
	return 2
}

// count is the document's count field.
func count(d *firestorepb.Document) int64 { return d.GetFields()["count"].GetIntegerValue() }

// decodeEvent decodes DocumentEventData's value (1), old_value (2) and update_mask (3).
func decodeEvent(t *testing.T, data []byte) receivedEvent {
	var e receivedEvent
	value, err := eventhttp.WrittenDocument(data)
	if err != nil {
		t.Error(err)
	}
	e.value = value
	for len(data) > 0 {
		num, _, n := protowire.ConsumeTag(data)
		v, m := protowire.ConsumeBytes(data[n:])
		if n < 0 || m < 0 {
			t.Errorf("DocumentEventData does not decode")
			return e
		}
		data = data[n+m:]
		switch num {
		case 2:
			e.oldValue = &firestorepb.Document{}
			if err := proto.Unmarshal(v, e.oldValue); err != nil {
				t.Error(err)
			}
		case 3:
			var mask firestorepb.DocumentMask
			if err := proto.Unmarshal(v, &mask); err != nil {
				t.Error(err)
			}
			e.updateMask = mask.FieldPaths
		}
	}
	return e
}

// TestMatchPattern checks Eventarc's path pattern wildcards: {x} one segment, {x=**} any number.
func TestMatchPattern(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"counters/{c}/shards/{s}", "counters/likes/shards/3", true},
		{"counters/{c}/shards/{s}", "apps/likes/shards/3", false},
		{"counters/{c}/shards/{s}", "counters/likes/shards/3/more/1", false},
		{"{collection}/{doc=**}/_counter_shards_/{shard}", "posts/p1/_counter_shards_/u", true},
		{"{collection}/{doc=**}/_counter_shards_/{shard}", "users/u/posts/p1/_counter_shards_/u", true},
		{"{collection}/{doc=**}/_counter_shards_/{shard}", "posts/p1/shards/u", false},
	} {
		if got := matchPattern(strings.Split(c.pattern, "/"), strings.Split(c.path, "/")); got != c.want {
			t.Errorf("matchPattern(%s, %s) = %t, want %t", c.pattern, c.path, got, c.want)
		}
	}
}

// TestDiscoveryPauseKeepsItsShareWithoutStallingOnASlowQuery: discovery queries take about a fifth
// of the time (four times a typical query's time between them, 200 ms at least), but one query
// slowed by a burst of load (51 s, seen beside 20,000 shards being rolled up) does not pause
// discovery for 204 s, leaving new documents' first events waiting as long.
func TestDiscoveryPauseKeepsItsShareWithoutStallingOnASlowQuery(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		recent []time.Duration
		want   time.Duration
	}{
		{[]time.Duration{ms(10)}, ms(200)},
		{[]time.Duration{ms(2000)}, ms(8000)},
		{[]time.Duration{ms(100), ms(120), ms(51000)}, ms(480)},
		{[]time.Duration{ms(2000), ms(2100), ms(1900), ms(51000), ms(2000)}, ms(8000)},
		{[]time.Duration{ms(9000), ms(8000), ms(10000), ms(100), ms(9000)}, ms(36000)},
	} {
		if got := discoveryPause(c.recent); got != c.want {
			t.Errorf("pause after queries of %v = %v, want %v", c.recent, got, c.want)
		}
	}
}
