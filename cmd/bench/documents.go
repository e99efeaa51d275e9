package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/internal/loadreport"
	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/shared"
)

// Runs of document changes (-via documents): clients create and delete likes in the emulator,
// counted by collection counters or by write-time aggregation, each on a stack of its own. See
// docs/performance.md, "Collection counters vs write-time aggregation".

// likesPattern is the documents the runs write and count.
const likesPattern = "posts/{post}/likes/{uid}"

// likesField is the parent's field write-time aggregation keeps.
const likesField = "likes"

// documentModes are the modes of -via documents.
var documentModes = map[string]string{"collection": "collection counters", "write-time": "write-time aggregation"}

// parentID is the ID of parent post i; counterOfParent its collection counter's.
func parentID(i int) string        { return fmt.Sprintf("bench-%d", i) }
func counterOfParent(i int) string { return "likes-" + parentID(i) }

// likeState is which likes exist or are being changed, and per parent the count and last change.
type likeState struct {
	mu         sync.Mutex
	exists     map[[2]int]bool
	busy       map[[2]int]bool
	count      []int64
	lastChange []time.Time
	// created is each existing like's update time; keys, per parent, each committed change's key.
	created map[[2]int]time.Time
	keys    []map[string]int64
	// at is when each change's version was made or removed, by key.
	at   map[string]time.Time
	path map[string]string
}

// changeKey is the key a collection counter gives a change of path from oldAt to newAt (zero: none).
func changeKey(path string, oldAt, newAt time.Time) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", path, oldAt.UnixNano(), newAt.UnixNano()))
	return hex.EncodeToString(sum[:16])
}

// documentsObserved is what the load of document changes saw.
type documentsObserved struct {
	start, end      time.Time
	changes, failed int64
	offered, perSec []int64 // per second of the load: changes started and committed
	state           *likeState
	firstErr        error
}

// newLikeState is the state of o.parents posts with no likes.
func newLikeState(o options) *likeState {
	st := &likeState{exists: map[[2]int]bool{}, busy: map[[2]int]bool{}, count: make([]int64, o.parents), lastChange: make([]time.Time, o.parents),
		created: map[[2]int]time.Time{}, keys: make([]map[string]int64, o.parents), at: map[string]time.Time{}, path: map[string]string{}}
	for i := range st.keys {
		st.keys[i] = map[string]int64{}
	}
	return st
}

// likePath is the like document of liker u of parent p.
func likePath(p, u int) string { return fmt.Sprintf("posts/%s/likes/u%d", parentID(p), u) }

// warmUp creates every like document before the load, so the stack's bridge watches each of them
// (docs/development.md).
func warmUp(ctx context.Context, o options, client *firestore.Client, st *likeState) error {
	bw := client.BulkWriter(ctx)
	jobs := map[[2]int]*firestore.BulkWriterJob{}
	for p := range o.parents {
		for u := range o.likers {
			job, err := bw.Create(client.Doc(likePath(p, u)), map[string]any{"at": firestore.ServerTimestamp})
			if err != nil {
				return err
			}
			jobs[[2]int{p, u}] = job
		}
	}
	bw.End()
	for k, job := range jobs {
		res, err := job.Results()
		if err != nil {
			return fmt.Errorf("warm-up: create %s: %w", likePath(k[0], k[1]), err)
		}
		key := changeKey(likePath(k[0], k[1]), time.Time{}, res.UpdateTime)
		st.exists[k], st.created[k] = true, res.UpdateTime
		st.keys[k[0]][key], st.at[key], st.path[key] = 1, res.UpdateTime, likePath(k[0], k[1])
		st.count[k[0]]++
	}
	return nil
}

// documentsLoad runs o.clients clients offering o.rate changes a second for o.duration, each
// creating a random like if missing, else deleting it.
func documentsLoad(ctx context.Context, o options, client *firestore.Client, st *likeState) *documentsObserved {
	obs := &documentsObserved{state: st, start: time.Now()}
	stop := obs.start.Add(o.duration)
	var mu sync.Mutex
	second := func(counts *[]int64, t time.Time) {
		i := int(t.Sub(obs.start) / time.Second)
		for len(*counts) <= i {
			*counts = append(*counts, 0)
		}
		(*counts)[i]++
	}
	var wg sync.WaitGroup
	for c := range o.clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c)+1, 42))
			pace := newPacer(o)
			for time.Now().Before(stop) {
				pace.wait()
				st.mu.Lock()
				var k [2]int
				for {
					k = [2]int{rng.IntN(o.parents), rng.IntN(o.likers)}
					if !st.busy[k] {
						break
					}
				}
				st.busy[k] = true
				create := !st.exists[k]
				st.mu.Unlock()
				ref := client.Doc(likePath(k[0], k[1]))
				began := time.Now()
				mu.Lock()
				second(&obs.offered, began)
				mu.Unlock()
				var err error
				var res *firestore.WriteResult
				if create {
					res, err = ref.Create(ctx, map[string]any{"at": firestore.ServerTimestamp})
				} else {
					_, err = ref.Delete(ctx, firestore.Exists)
				}
				path := likePath(k[0], k[1])
				done := time.Now()
				st.mu.Lock()
				delete(st.busy, k)
				if err == nil {
					st.exists[k] = create
					if create {
						st.count[k[0]]++
						st.created[k] = res.UpdateTime
						key := changeKey(path, time.Time{}, res.UpdateTime)
						st.keys[k[0]][key], st.at[key], st.path[key] = 1, res.UpdateTime, path
					} else {
						st.count[k[0]]--
						key := changeKey(path, st.created[k], time.Time{})
						st.keys[k[0]][key], st.at[key], st.path[key] = -1, done, path
					}
					st.lastChange[k[0]] = done
				}
				st.mu.Unlock()
				mu.Lock()
				if err == nil {
					obs.changes++
					second(&obs.perSec, done)
				} else {
					obs.failed++
					if obs.firstErr == nil {
						obs.firstErr = err
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	obs.end = time.Now()
	return obs
}

// writeTimeAggregation is Firebase's write-time aggregation as a CloudEvent handler: a transaction
// per event adjusts the parent's likes; redeliveries count again.
type writeTimeAggregation struct {
	client *firestore.Client
	// since is when the trigger was "deployed": earlier changes are ignored.
	since atomic.Pointer[time.Time]

	mu              sync.Mutex
	applied, failed int64
	last            time.Time
	// ids counts the applications of each event ID since since.
	ids map[string]int
}

// handle applies one event.
func (g *writeTimeAggregation) handle(ctx context.Context, id string, at time.Time, subject string, value, old *firestorepb.Document) error {
	if since := g.since.Load(); since == nil || at.Before(*since) {
		return nil
	}
	path, _ := strings.CutPrefix(subject, "documents/")
	segs := strings.Split(path, "/")
	var delta int64
	switch {
	case old == nil && value != nil:
		delta = 1
	case old != nil && value == nil:
		delta = -1
	}
	if len(segs) != 4 || delta == 0 {
		return nil
	}
	parent := g.client.Collection(segs[0]).Doc(segs[1])
	err := g.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(parent)
		if err != nil {
			return err
		}
		n, _ := snap.Data()[likesField].(int64)
		return tx.Update(parent, []firestore.Update{{Path: likesField, Value: n + delta}})
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.failed++
		return err
	}
	g.applied++
	g.ids[id]++
	g.last = time.Now()
	return nil
}

// documentKind names a written document's kind for the writes-per-change split.
func documentKind(schema shared.Schema) func(doc string) string {
	return func(doc string) string {
		segs := strings.Split(doc, "/")
		switch {
		case segs[0] == schema.Counters && len(segs) == 2:
			return "counters"
		case segs[0] == schema.Counters && len(segs) >= 4:
			return segs[2]
		case segs[0] == schema.Rollups:
			return "roll-ups"
		case segs[0] == schema.Tops:
			return "tops"
		case segs[0] == schema.Dedupe:
			return "dedupe"
		case segs[0] == "posts" && len(segs) == 2:
			return "app: posts (parents)"
		case segs[0] == "posts":
			return "app: " + strings.Join(segs[:len(segs)-1], "/")
		}
		return segs[0]
	}
}

// settleTimeout bounds the wait, after the load, for every event to be acknowledged (or given up)
// and the counters to be exact. Counts judged while events are still in delivery are not final: the
// report says how many were (docs/performance.md).
const settleTimeout = 5 * time.Minute

// runDocumentsPlan runs a documents plan on a stack of its own and measures its counting.
func runDocumentsPlan(ctx context.Context, o options, p plan) (loadreport.Run, error) {
	run := loadreport.Run{Name: p.name(), Mode: p.mode, Via: p.via, Instances: p.instances, Settings: map[string]string{
		"clients": fmt.Sprint(o.clients), "duration": o.duration.String(), "parents": fmt.Sprint(o.parents),
		"likers": fmt.Sprint(o.likers), "offered_rate": fmt.Sprint(o.rate), "copies": fmt.Sprint(o.copies),
		"write_time_in_flight": fmt.Sprint(o.writeTimeInFlight),
	}}
	counting, ok := documentModes[p.mode]
	if !ok {
		return run, fmt.Errorf("unknown mode %q of -via documents: use collection or write-time", p.mode)
	}
	doc := &loadreport.Documents{Counting: counting, Parents: o.parents, Copies: o.copies}
	run.Documents = doc
	logDir, err := os.MkdirTemp("", "bench-"+p.mode+"-")
	if err != nil {
		return run, err
	}
	// The stack counts likes only in the collection mode: the declaration file is the run's own.
	declared := "[]"
	if p.mode == "collection" {
		declared = `[{"documents": "` + likesPattern + `", "counter": "likes-{post}", "group": "posts"}]`
	}
	sourcesFile := filepath.Join(logDir, "counter-sources.json")
	if err := os.WriteFile(sourcesFile, []byte(declared), 0o644); err != nil {
		return run, err
	}
	env := []string{"COUNTER_SOURCES=" + sourcesFile, fmt.Sprintf("LOCALSTACK_EVENT_COPIES=%d", o.copies)}
	if o.groupInterval != "" {
		env = append(env, "GROUP_COMMIT_INTERVAL="+o.groupInterval)
	}
	run.Settings["env"], run.Settings["logs"] = fmt.Sprint(env), logDir
	fmt.Fprintf(os.Stderr, "%s: starting the local stack (logs in %s)\n", run.Name, logDir)
	s, err := startStack(stackConfig{binary: o.localstack, project: "bench-" + p.mode, logDir: logDir, instances: p.instances, env: env})
	if err != nil {
		return run, err
	}
	defer s.stop()
	os.Setenv("FIRESTORE_EMULATOR_HOST", s.firestore)
	client, err := firestore.NewClient(ctx, s.project)
	if err != nil {
		return run, err
	}
	defer client.Close()
	schema := config.Default().Schema()

	// The parents exist before the load, as posts do before they are liked.
	batch := client.BulkWriter(ctx)
	for i := range o.parents {
		if _, err := batch.Set(client.Collection("posts").Doc(parentID(i)), map[string]any{"title": "post " + fmt.Sprint(i)}); err != nil {
			return run, err
		}
	}
	batch.End()

	commitFile := s.commitLog
	var guide *writeTimeAggregation
	var guideBridge *localstack.EventBridge
	if p.mode == "write-time" {
		if guide, guideBridge, commitFile, err = startWriteTimeAggregation(ctx, s, logDir, o.copies, o.writeTimeInFlight); err != nil {
			return run, err
		}
		defer guideBridge.Stop()
		defer guide.client.Close()
	}

	// Every like exists and is counted before the load (warmUp says why).
	st := newLikeState(o)
	fmt.Fprintf(os.Stderr, "  warm-up: creating %d likes\n", o.parents*o.likers)
	if err := warmUp(ctx, o, client, st); err != nil {
		return run, err
	}
	warmDeadline := time.Now().Add(5 * time.Minute)
	if guide == nil {
		for i := 0; i < o.parents; {
			c, err := exactCount(s.functionsURL, counterOfParent(i))
			if time.Now().After(warmDeadline) {
				return run, fmt.Errorf("warm-up: counter %s never reached %d (last %d, %v)", counterOfParent(i), st.count[i], c, err)
			}
			if err != nil || c != st.count[i] {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			i++
		}
	} else {
		// Write-time aggregation starts from the exact counts too, once its events are handled.
		for {
			if time.Now().After(warmDeadline) {
				return run, fmt.Errorf("warm-up: the write-time aggregation's events never drained")
			}
			bs := guideBridge.Stats()
			if bs.Received >= int64(o.parents*o.likers) && bs.Delivered+bs.Failed == bs.Received {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		for i := range o.parents {
			if _, err := client.Collection("posts").Doc(parentID(i)).Update(ctx, []firestore.Update{{Path: likesField, Value: st.count[i]}}); err != nil {
				return run, err
			}
		}
	}
	var before localstack.BridgeStats
	if guideBridge != nil {
		now := time.Now()
		guide.since.Store(&now)
		before = guideBridge.Stats()
		guide.mu.Lock()
		guide.applied, guide.ids = 0, map[string]int{}
		guide.mu.Unlock()
	}
	// value reads each counter as the mode keeps it: the roll-up, or the parent's likes field.
	refs := make([]*firestore.DocumentRef, o.parents)
	for i := range refs {
		if p.mode == "collection" {
			refs[i] = schema.RollupRef(client, counterOfParent(i))
		} else {
			refs[i] = client.Collection("posts").Doc(parentID(i))
		}
	}
	valueOf := func(snap *firestore.DocumentSnapshot) (int64, bool) {
		if !snap.Exists() {
			return 0, false
		}
		field := likesField
		if p.mode == "collection" {
			field = shared.FieldCount
		}
		v, err := snap.DataAt(field)
		n, ok := v.(int64)
		return n, err == nil && ok
	}
	values := watchValues(ctx, refs, valueOf)
	defer values.close()
	fmt.Fprintf(os.Stderr, "  warm-up done; the load starts\n")
	obs := documentsLoad(ctx, o, client, st)
	if obs.firstErr != nil {
		fmt.Fprintf(os.Stderr, "  %d changes failed, the first: %v\n", obs.failed, obs.firstErr)
	}
	doc.Changes, doc.Failed = obs.changes, obs.failed
	doc.ChangesPerSecond = float64(obs.changes) / obs.end.Sub(obs.start).Seconds()
	fmt.Fprintf(os.Stderr, "  %d changes in %s (%.0f/s); waiting for the counts\n", obs.changes, obs.end.Sub(obs.start).Round(time.Millisecond), doc.ChangesPerSecond)

	// A change whose commit failed may have been applied: the counts to reach are count()'s.
	for i := range o.parents {
		want, err := countLikes(ctx, client, i)
		if err != nil {
			return run, err
		}
		if want != obs.state.count[i] && obs.failed == 0 {
			return run, fmt.Errorf("count() of %s's likes is %d, the harness made %d", parentID(i), want, obs.state.count[i])
		}
		obs.state.count[i] = want
	}

	drained := func() (bool, time.Time) {
		if guideBridge != nil {
			st := guideBridge.Stats()
			guide.mu.Lock()
			last := guide.last
			guide.mu.Unlock()
			return st.Delivered+st.Failed == st.Received, last
		}
		st, ok := s.eventStats()
		return ok && st.Delivered+st.Failed == st.Received, time.Time{}
	}
	inDelivery := func() int64 {
		if guideBridge != nil {
			st := guideBridge.Stats()
			return st.Received - st.Delivered - st.Failed
		}
		if st, ok := s.eventStats(); ok {
			return st.Received - st.Delivered - st.Failed
		}
		return 0
	}

	// Each counter's lag from its parent's last change until it showed the harness's count for
	// good, as its listener saw it.
	var drainedAt time.Time
	deadline := obs.end.Add(settleTimeout)
	for time.Now().Before(deadline) {
		now := time.Now()
		if done, _ := drained(); done && drainedAt.IsZero() {
			drainedAt = now
		} else if !done {
			drainedAt = time.Time{}
		}
		showing := 0
		for i := range o.parents {
			if n, ok := values.latest(i); ok && n == obs.state.count[i] {
				showing++
			}
		}
		// Write-time aggregation that double counts never shows count(): stop 5 s after its
		// queue is empty.
		if !drainedAt.IsZero() && (showing == o.parents || now.Sub(drainedAt) > 5*time.Second) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	doc.InDelivery = inDelivery()
	if err := values.close(); err != nil {
		return run, fmt.Errorf("listen to the counts: %w", err)
	}
	var exact []time.Duration
	for i := range o.parents {
		if lag, ok := values.exactAfter(i, obs.state.count[i], obs.state.lastChange[i]); ok {
			exact = append(exact, lag)
		}
	}
	doc.Exact = len(exact)
	doc.ExactAfterP50, doc.ExactAfterMax = loadreport.Percentile(exact, 0.5), loadreport.Percentile(exact, 1)

	// Delivery figures: the write-time handler's own bridge, or the stack's record of the likes'
	// events (the stack's bridge also carries the roll-up trigger's).
	var lastHandled time.Time
	if guideBridge != nil {
		st := guideBridge.Stats()
		doc.Deliveries, doc.DeliveriesFailed, doc.Invocations = st.Delivered-before.Delivered, st.Failed-before.Failed, st.Invocations-before.Invocations
		_, lastHandled = drained()
		guide.mu.Lock()
		doc.Applied = guide.applied
		for _, n := range guide.ids {
			doc.AppliedTwice += int64(n - 1)
		}
		guide.mu.Unlock()
	} else if records, err := s.deliveries("posts/"); err == nil {
		var listen, handle []time.Duration
		for _, r := range records {
			if !r.Answered.IsZero() && !r.Received.Before(obs.start) {
				doc.Deliveries++
				doc.Redeliveries += int64(max(0, r.Attempts-1))
				if r.Settled.After(lastHandled) {
					lastHandled = r.Settled
				}
				if !r.Written.IsZero() {
					listen = append(listen, r.Received.Sub(r.Written))
				}
				handle = append(handle, r.Answered.Sub(r.Reached))
			}
		}
		doc.ListenP50, doc.ListenP90 = loadreport.Percentile(listen, 0.5), loadreport.Percentile(listen, 0.9)
		doc.HandleP50, doc.HandleP90 = loadreport.Percentile(handle, 0.5), loadreport.Percentile(handle, 0.9)
		doc.Invocations = doc.Deliveries
		if st, ok := s.eventStats(); ok {
			doc.DeliveriesFailed = st.Failed
		}
	}
	if !lastHandled.IsZero() {
		doc.HandledPerSecond = float64(doc.Deliveries) / lastHandled.Sub(obs.start).Seconds()
		doc.Drained = max(0, lastHandled.Sub(obs.end))
	}
	if !drainedAt.IsZero() && lastHandled.IsZero() {
		doc.Drained = drainedAt.Sub(obs.end)
	}

	// The final check: every counter against count() of its documents.
	wrong := map[int]int64{}
	snaps, err := client.GetAll(ctx, refs)
	if err != nil {
		return run, err
	}
	for i := range o.parents {
		want, err := countLikes(ctx, client, i)
		if err != nil {
			return run, err
		}
		if want != obs.state.count[i] {
			return run, fmt.Errorf("count() of %s's likes changed after the load: %d, then %d", parentID(i), obs.state.count[i], want)
		}
		got, _ := valueOf(snaps[i])
		if p.mode == "collection" {
			if c, err := exactCount(s.functionsURL, counterOfParent(i)); err == nil && c != got {
				got = c // Count is the value; a roll-up that differs from it is stale
			}
		}
		if got != want {
			wrong[i] = got - want
			doc.Off++
		}
		doc.Error += int64(math.Abs(float64(got - want)))
		if got > want {
			doc.Overcounted++
		}
	}
	if p.mode == "collection" && len(wrong) > 0 {
		if doc.InDelivery > 0 {
			fmt.Fprintf(os.Stderr, "  %d events were still in delivery: changes missing below may be among them, not lost\n", doc.InDelivery)
		}
		if err := auditLedgers(ctx, client, schema, o, obs.state, wrong); err != nil {
			fmt.Fprintf(os.Stderr, "  ledger audit: %v\n", err)
		}
	}
	settled := time.Now()
	run.Start, run.End, run.Duration = obs.start, settled, obs.end.Sub(obs.start)
	run.Offered, run.Acknowledged = obs.changes+obs.failed, obs.changes
	run.ExactCheckPass = doc.Error == 0 && doc.InDelivery == 0
	run.ExactCheck = fmt.Sprintf("sum of |value - count()| over %d counters: %d", o.parents, doc.Error)
	if doc.InDelivery > 0 {
		run.ExactCheck += fmt.Sprintf(" (not final: %d events still in delivery after %s)", doc.InDelivery, settleTimeout)
	}
	if p.mode == "write-time" { // its drift is what the run measures; only ours must be exact
		run.ExactCheckPass = true
		run.ExactCheck += " (write-time aggregation: reported, not required)"
	}
	n := max(1, int((settled.Sub(obs.start)+time.Second-1)/time.Second))
	run.Timeline = make([]loadreport.Second, n)
	for i := range run.Timeline {
		run.Timeline[i].T = i
		if i < len(obs.offered) {
			run.Timeline[i].Offered = obs.offered[i]
		}
		if i < len(obs.perSec) {
			run.Timeline[i].Acknowledged = obs.perSec[i]
		}
	}
	commits, err := commitlog.ReadFile(commitFile)
	if err != nil {
		return run, err
	}
	run.CountDocumentWrites(commits, obs.start, settled, documentKind(schema))
	return run, nil
}

// startWriteTimeAggregation serves writeTimeAggregation on loopback, recording its commits in
// logDir, and feeds it the likes' events, each copies times, inFlight at once.
func startWriteTimeAggregation(ctx context.Context, s *stack, logDir string, copies, inFlight int) (*writeTimeAggregation, *localstack.EventBridge, string, error) {
	commitFile := filepath.Join(logDir, "write-time-commits.jsonl")
	f, err := os.Create(commitFile)
	if err != nil {
		return nil, nil, "", err
	}
	opt, err := commitlog.NewRecorder(f).EmulatorOption(s.firestore)
	if err != nil {
		return nil, nil, "", err
	}
	client, err := firestore.NewClient(ctx, s.project, opt)
	if err != nil {
		return nil, nil, "", err
	}
	g := &writeTimeAggregation{client: client, ids: map[string]int{}}
	url, err := serveWriteTime(g)
	if err != nil {
		return nil, nil, "", err
	}
	logs, err := os.Create(filepath.Join(logDir, "write-time-bridge.log"))
	if err != nil {
		return nil, nil, "", err
	}
	b, err := localstack.WatchDocuments(ctx, logs, s.firestore, s.project, "google.cloud.firestore.document.v1.written", likesPattern, url, inFlight, copies)
	if err != nil {
		return nil, nil, "", err
	}
	return g, b, commitFile, nil
}

// deliveries reads the stack's event bridge's delivery records of the documents under prefix.
func (s *stack) deliveries(prefix string) ([]localstack.DeliveryRecord, error) {
	if s.eventsStats == "" {
		return nil, fmt.Errorf("the stack reports no event deliveries")
	}
	resp, err := httpClient.Get(strings.TrimSuffix(s.eventsStats, "/stats") + "/deliveries?prefix=" + prefix)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("deliveries: %s", resp.Status)
	}
	var records []localstack.DeliveryRecord
	return records, json.NewDecoder(resp.Body).Decode(&records)
}

// auditLedgers prints, per inexact counter, committed changes missing from its ledger and ledger
// keys of changes never made; BENCH_AUDIT_DETAIL lists each missing change.
func auditLedgers(ctx context.Context, client *firestore.Client, schema shared.Schema, o options, st *likeState, wrong map[int]int64) error {
	for i := range o.parents {
		if _, ok := wrong[i]; !ok {
			continue
		}
		csnap, err := schema.CounterRef(client, counterOfParent(i)).Get(ctx)
		if err != nil {
			return err
		}
		base, _ := csnap.Data()[shared.FieldBaseAt].(time.Time)
		snaps, err := schema.CounterRef(client, counterOfParent(i)).Collection(shared.ChangeLedgerCollection).Documents(ctx).GetAll()
		if err != nil {
			return err
		}
		counted := map[string]int64{}
		for _, snap := range snaps {
			counted[snap.Ref.ID], _ = snap.Data()[shared.FieldChangeDelta].(int64)
		}
		var missing, extra, missingSum, extraSum, afterBase, afterBaseSum int64
		for k, d := range st.keys[i] {
			if _, ok := counted[k]; !ok {
				missing++
				missingSum += d
				if st.at[k].After(base) {
					afterBase++
					afterBaseSum += d
					if os.Getenv("BENCH_AUDIT_DETAIL") != "" {
						fmt.Fprintf(os.Stderr, "    not counted: %s %+d at %s key %s\n", st.path[k], d, st.at[k].Format("15:04:05.000000"), k)
					}
				}
			}
		}
		for k, d := range counted {
			if _, ok := st.keys[i][k]; !ok {
				extra++
				extraSum += d
			}
		}
		fmt.Fprintf(os.Stderr, "  ledger audit %s (value - count() = %+d, base at %s): %d changes made, %d in the ledger; %d made not in it (sum %+d; after the base: %d, sum %+d), %d in it not made (sum %+d)\n",
			counterOfParent(i), wrong[i], base.Format("15:04:05.000000"), len(st.keys[i]), len(counted), missing, missingSum, afterBase, afterBaseSum, extra, extraSum)
	}
	return nil
}

// countLikes is Firestore's count() of parent i's likes.
func countLikes(ctx context.Context, client *firestore.Client, i int) (int64, error) {
	res, err := client.Collection("posts").Doc(parentID(i)).Collection("likes").NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("count() of %s's likes: %w", parentID(i), err)
	}
	return aggregateInt(res["n"]), nil
}
