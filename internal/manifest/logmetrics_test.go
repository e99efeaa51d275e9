package manifest_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/cloudevents/sdk-go/v2/event"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/sources"
)

// TestLogMetricsMatchTheLinesWritten: each log-based metric's filter (manifest.LogMetrics) matches a line that
// its functions really write, captured from real calls against the emulator: an increment applied
// and one refused (the summaries at shutdown), a message applied, a 504, a roll-up by the trigger,
// a sweep that finishes and one out of time, a probe of a collection trigger checked, a shard under
// a document not declared and one under a missing document. A field renamed in
// the code or in a metric fails it.
func TestLogMetricsMatchTheLinesWritten(t *testing.T) {
	ctx := context.Background()
	client := testenv.Firestore(t)
	cfg := config.Default()
	cfg.ExtensionFoldInterval = 100 * time.Millisecond
	cfg.ExtensionFolds = "posts/{post}:likes"
	written := map[string][]map[string]any{} // by entry point
	run := func(entryPoint string, scenario func(s *functions.Service)) {
		t.Helper()
		var logs testenv.LogBuffer
		s := functions.NewService(cfg, client, cloudlog.New(&logs, slog.LevelDebug))
		scenario(s)
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		written[entryPoint] = append(written[entryPoint], logs.Lines(t)...)
	}
	post := func(s *functions.Service, body string) int {
		rec, req := httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/Increment", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		s.Increment(rec, req)
		return rec.Code
	}
	counterID := testenv.UniqueID("metrics")
	run(functions.EntryIncrement, func(s *functions.Service) {
		if code := post(s, fmt.Sprintf(`{"counter":%q,"delta":2}`, counterID)); code != http.StatusOK {
			t.Fatalf("increment: %d", code)
		}
		if code := post(s, fmt.Sprintf(`{"counter":%q,"delta":"two"}`, counterID)); code != http.StatusBadRequest {
			t.Fatalf("bad increment: %d, want 400", code)
		}
	})
	run(functions.EntryIncrement, func(*functions.Service) { // a 504: every answer from Firestore is lost
		db := testenv.FirestoreBehindFaultProxy(t)
		var logs testenv.LogBuffer
		unreachable := cfg
		unreachable.RequestTimeout = 2 * time.Second
		s := functions.NewService(unreachable, db.Client, cloudlog.New(&logs, slog.LevelDebug))
		if code := post(s, fmt.Sprintf(`{"counter":%q}`, counterID)); code != http.StatusOK {
			t.Fatalf("increment before the faults: %d", code)
		}
		db.Proxy.SetFaults(faultproxy.Faults{DropResponseRate: 1})
		if code := post(s, fmt.Sprintf(`{"counter":%q}`, counterID)); code != http.StatusGatewayTimeout {
			t.Fatalf("increment whose commit answer is lost: %d, want 504", code)
		}
		db.Proxy.SetFaults(faultproxy.Faults{})
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		written[functions.EntryIncrement] = append(written[functions.EntryIncrement], logs.Lines(t)...)
	})
	run(functions.EntryIncrementFromPubSub, func(s *functions.Service) {
		e := event.New()
		e.SetID(testenv.UniqueID("message"))
		e.SetType(eventhttp.EventPubSubMessagePublished)
		e.SetSource("//pubsub.googleapis.com/projects/p/topics/" + shared.TopicIncrements)
		msg := map[string]any{"data": []byte(fmt.Sprintf(`{"counter":%q}`, counterID)), "messageId": e.ID()}
		if err := e.SetData(event.ApplicationJSON, map[string]any{"message": msg}); err != nil {
			t.Fatal(err)
		}
		if err := s.IncrementFromPubSub(ctx, e); err != nil {
			t.Fatal(err)
		}
	})
	run(functions.EntryRollupOnShardWrite, func(s *functions.Service) {
		e := event.New()
		e.SetID(testenv.UniqueID("event"))
		e.SetType(eventhttp.EventFirestoreDocWritten)
		e.SetSource("//firestore.googleapis.com/projects/p/databases/(default)")
		e.SetSubject("documents/" + cfg.CountersCollection + "/" + counterID + "/" + shared.ShardsCollection + "/0")
		if err := s.RollupOnShardWrite(ctx, e); err != nil {
			t.Fatal(err)
		}
	})
	tick := func(s *functions.Service, budget time.Duration) {
		ctx, cancel := context.WithTimeout(ctx, budget)
		defer cancel()
		e := event.New()
		e.SetID(testenv.UniqueID("tick"))
		e.SetType(eventhttp.EventPubSubMessagePublished)
		e.SetSource("//pubsub.googleapis.com/projects/p/topics/" + shared.TopicRollupTick)
		_ = s.RollupScheduled(ctx, e)
	}
	run(functions.EntryRollupScheduled, func(s *functions.Service) { tick(s, time.Minute) })
	run(functions.EntryRollupScheduled, func(s *functions.Service) { tick(s, 0) }) // out of time at once: it cannot finish
	// star declares notes' stars as collection counters stars-{note} on s, stars note and delivers
	// the star's event.
	star := func(s *functions.Service, note string) {
		set, err := sources.Parse([]byte(`[{"documents": "notes/{note}/stars/{uid}", "counter": "stars-{note}"}]`), cfg.Schema())
		if err != nil {
			t.Fatal(err)
		}
		s.CountSources(set)
		res, err := client.Doc("notes/"+note+"/stars/u1").Set(ctx, map[string]any{"at": 1})
		if err != nil {
			t.Fatal(err)
		}
		doc := &firestorepb.Document{Name: "projects/p/databases/(default)/documents/notes/" + note + "/stars/u1",
			CreateTime: timestamppb.New(res.UpdateTime), UpdateTime: timestamppb.New(res.UpdateTime)}
		handler, _ := s.EntryPoint(functions.EntryCountDocumentWrite)
		rec := httptest.NewRecorder()
		if handler(rec, testenv.DocumentWritten(t, "notes/"+note+"/stars/u1", res.UpdateTime, doc, nil)); rec.Code >= 300 {
			t.Fatalf("event answered %d %s", rec.Code, rec.Body)
		}
	}
	run(functions.EntryRollupScheduled, func(s *functions.Service) { // a quiet collection counter that drifted
		note := testenv.UniqueID("note")
		star(s, note)
		counterRef := client.Collection(cfg.Schema().Counters).Doc("stars-" + note)
		if _, err := counterRef.Collection(shared.ShardsCollection).Doc("0").Set(ctx, map[string]any{shared.FieldCount: 3}); err != nil {
			t.Fatal(err)
		}
		quiet := []firestore.Update{{Path: shared.FieldTouchedMinute, Value: shared.UnixMinute(time.Now().Add(-5 * time.Minute))}}
		if _, err := counterRef.Update(ctx, quiet); err != nil {
			t.Fatal(err)
		}
		// And one whose declaration is gone: it cannot be verified.
		gone := counter.NewStore(client, cfg.Schema(), counter.Options{DefaultNumShards: 1})
		goneID := "stars-" + testenv.UniqueID("gone")
		if _, err := gone.Increments.Increment(ctx, counter.Request{Counter: goneID, Delta: 1}); err != nil {
			t.Fatal(err)
		}
		undeclared := append([]firestore.Update{{Path: shared.FieldSource, Value: "gone of nowhere/{x}"}}, quiet...)
		if _, err := client.Collection(cfg.Schema().Counters).Doc(goneID).Update(ctx, undeclared); err != nil {
			t.Fatal(err)
		}
		tick(s, time.Minute)
	})
	run(functions.EntryRollupScheduled, func(s *functions.Service) { // a probed trigger: the second tick checks it
		set, err := sources.Parse([]byte(`[{"documents": "boards/{board}/pins/{pin}", "counter": "pins-{board}", "canary": true}]`), cfg.Schema())
		if err != nil {
			t.Fatal(err)
		}
		s.CountSources(set)
		tick(s, time.Minute)
		tick(s, time.Minute)
	})
	run(functions.EntryCountDocumentWrite, func(s *functions.Service) { // a star on an ordinary counter
		note := testenv.UniqueID("note")
		if code := post(s, fmt.Sprintf(`{"counter":"stars-%s"}`, note)); code != http.StatusOK {
			t.Fatalf("increment: %d", code)
		}
		star(s, note) // declared after the ordinary counter was made
	})
	run(functions.EntryFoldExtensionShards, func(s *functions.Service) {
		deliver := func(doc string) error {
			e := event.New()
			e.SetID(testenv.UniqueID("event"))
			e.SetType(eventhttp.EventFirestoreDocWritten)
			e.SetSource("//firestore.googleapis.com/projects/p/databases/(default)")
			name := doc + "/" + extshards.ShardsCollection + "/" + testenv.ExtensionShardID
			e.SetSubject("documents/" + name)
			value := &firestorepb.Document{Name: "projects/p/databases/(default)/documents/" + name,
				Fields: map[string]*firestorepb.Value{"likes": {ValueType: &firestorepb.Value_IntegerValue{IntegerValue: 1}}}}
			if err := e.SetData("application/protobuf", testenv.DocumentEventData(t, value, nil)); err != nil {
				t.Fatal(err)
			}
			if _, err := client.Doc(name).Set(ctx, map[string]any{"likes": 1}); err != nil {
				t.Fatal(err)
			}
			return s.FoldExtensionShards(ctx, e)
		}
		// A document EXTENSION_FOLDS does not declare (fold_error), and one the app has not created
		// yet (fold_waiting).
		if err := deliver(testenv.UniqueID("users") + "/u1"); err != nil {
			t.Fatal(err)
		}
		if err := deliver("posts/" + testenv.UniqueID("missing")); err == nil {
			t.Fatal("the event of a shard under a missing document was acknowledged")
		}
	})

	for _, m := range manifest.LogMetrics() {
		matched := 0
		for _, e := range m.EntryPoints {
			f, _ := manifest.DeployedFunction(e)
			for _, line := range written[e] {
				if filterMatches(t, m.Filter(), f.Name, line) && hasFields(line, m) {
					matched++
				}
			}
		}
		if matched == 0 {
			var events []any
			for _, e := range m.EntryPoints {
				for _, line := range written[e] {
					events = append(events, line["event"])
				}
			}
			t.Errorf("metric %s (filter %s, value %q, labels %v) matches none of the %d lines its functions %v wrote; their events: %v",
				m.Name, m.Filter(), m.Value, m.Labels, len(events), m.EntryPoints, events)
		}
	}
}

// filterMatches evaluates a log-based metric's Cloud Logging filter, as deployed, on a line that
// the Cloud Run service service wrote: every term is `resource.type="cloud_run_revision"`,
// `resource.labels.service_name=("a" OR "b")` or `jsonPayload.FIELD=VALUE` (a quoted string or a
// literal), joined by AND; any other term fails the test.
func filterMatches(t *testing.T, filter, service string, line map[string]any) bool {
	t.Helper()
	for _, term := range strings.Split(filter, " AND ") {
		name, value, ok := strings.Cut(term, "=")
		switch {
		case !ok:
			t.Fatalf("filter %s: term %q is not NAME=VALUE", filter, term)
		case name == "resource.type":
			if value != `"cloud_run_revision"` {
				return false
			}
		case name == "resource.labels.service_name":
			names := strings.Split(strings.TrimSuffix(strings.TrimPrefix(value, "("), ")"), " OR ")
			if !slices.Contains(names, strconv.Quote(service)) {
				return false
			}
		case strings.HasPrefix(name, "jsonPayload."):
			got, present := line[strings.TrimPrefix(name, "jsonPayload.")]
			if !present {
				return false
			}
			want := value
			if unquoted, err := strconv.Unquote(value); err == nil {
				if got != unquoted {
					return false
				}
				continue
			}
			if fmt.Sprint(got) != want {
				return false
			}
		default:
			t.Fatalf("filter %s: term %q is not one the test evaluates", filter, term)
		}
	}
	return true
}

// hasFields says whether a line has the number a distribution metric extracts and the string of
// each label.
func hasFields(line map[string]any, m manifest.LogMetric) bool {
	if _, ok := line[m.Value].(float64); m.Value != "" && !ok {
		return false
	}
	for _, l := range m.Labels {
		if _, ok := line[l].(string); !ok {
			return false
		}
	}
	return true
}

// TestSweepAbsenceAlertCountsEverySweep: the alert sweep_absent watches a metric that counts every
// scheduled sweep, whatever its outcome: each run of RollupScheduled, one that finishes and one out
// of time at once (it fails reading its progress), writes exactly one line that the metric's filter
// counts, so the metric goes quiet only when the sweep stops running (scheduler job paused or
// deleted, topic or subscription broken, the function failing before it logs).
func TestSweepAbsenceAlertCountsEverySweep(t *testing.T) {
	ctx := context.Background()
	var policy *manifest.AlertPolicy
	for _, p := range manifest.AlertPolicies() {
		if p.Key == "sweep_absent" {
			policy = &p
		}
	}
	if policy == nil {
		t.Fatal("no alert policy sweep_absent: nothing fires when the scheduled sweep stops running")
	}
	var metric *manifest.LogMetric
	for _, m := range manifest.LogMetrics() {
		if strings.Contains(policy.Filter, `metric.type="`+m.Type()+`"`) {
			metric = &m
		}
	}
	if metric == nil || metric.Value != "" || !slices.Equal(metric.EntryPoints, []string{functions.EntryRollupScheduled}) {
		t.Fatalf("alert sweep_absent (filter %s) watches %+v; want a declared counter of rollup-scheduled's lines", policy.Filter, metric)
	}
	client := testenv.Firestore(t)
	f, _ := manifest.DeployedFunction(functions.EntryRollupScheduled)
	for _, budget := range []time.Duration{time.Minute, 0} {
		var logs testenv.LogBuffer
		s := functions.NewService(config.Default(), client, cloudlog.New(&logs, slog.LevelInfo))
		runCtx, cancel := context.WithTimeout(ctx, budget)
		e := event.New()
		e.SetID(testenv.UniqueID("tick"))
		e.SetType(eventhttp.EventPubSubMessagePublished)
		e.SetSource("//pubsub.googleapis.com/projects/p/topics/" + shared.TopicRollupTick)
		err := s.RollupScheduled(runCtx, e)
		cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		counted := 0
		for _, line := range logs.Lines(t) {
			if filterMatches(t, metric.Filter(), f.Name, line) {
				counted++
			}
		}
		if counted != 1 {
			t.Errorf("a sweep with %v to run (result %v) wrote %d lines metric %s counts, want 1: %v", budget, err, counted, metric.Name, logs.Lines(t))
		}
	}
}
