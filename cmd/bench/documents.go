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

// Runs of document changes (-via documents): clients create, delete and move likes in the
// emulator, counted by collection counters (keyed by path or by a field) or by write-time
// aggregation, each on a stack of its own. See docs/performance.md, "Collection counters vs
// write-time aggregation" and "Field-keyed counters with moves".

// likesPattern is the documents the runs write and count.
const likesPattern = "posts/{post}/likes/{uid}"

// likesField is the parent's field write-time aggregation keeps.
const likesField = "likes"

// documentModes are the modes of -via documents.
var documentModes = map[string]string{"collection": "collection counters", "field": "field-keyed counters, with moves", "write-time": "write-time aggregation"}

// parentID is the ID of parent post i.
func parentID(i int) string { return fmt.Sprintf("bench-%d", i) }

// moveShare is how often the field mode's change of an existing like moves it to another post
// rather than deleting it: a third of its changes are moves.
const moveShare = 0.5

// likeLayout is where a mode's likes live: posts/{post}/likes/{uid}, or (flat) likes/{like} whose
// postId field names its post, counted by likes-{field:postId}, so that an update moves a like.
// Slot s is one possible like; nested, it belongs to post s/likers.
type likeLayout struct {
	flat   bool
	likers int
}

// layoutOf is mode's layout.
func layoutOf(mode string, o options) likeLayout {
	return likeLayout{flat: mode == "field", likers: o.likers}
}

// postValue is post i's postId in flat likes.
func postValue(i int) string { return fmt.Sprintf("bench%d", i) }

// path is slot s's like document.
func (l likeLayout) path(s int) string {
	if l.flat {
		return fmt.Sprintf("likes/l%d", s)
	}
	return fmt.Sprintf("posts/%s/likes/u%d", parentID(s/l.likers), s%l.likers)
}

// declaration is the stack's counter-sources.json.
func (l likeLayout) declaration() string {
	if l.flat {
		return `[{"documents": "likes/{like}", "counter": "likes-{field:postId}", "group": "posts"}]`
	}
	return `[{"documents": "` + likesPattern + `", "counter": "likes-{post}", "group": "posts"}]`
}

// counter is post i's counter ID (a template of one field's letters and digits keeps them).
func (l likeLayout) counter(i int) string {
	if l.flat {
		return "likes-" + postValue(i)
	}
	return "likes-" + parentID(i)
}

// data is a new like of post i.
func (l likeLayout) data(i int) map[string]any {
	if l.flat {
		return map[string]any{"at": firestore.ServerTimestamp, "postId": postValue(i)}
	}
	return map[string]any{"at": firestore.ServerTimestamp}
}

// prefix starts the likes' paths (the stack's delivery records).
func (l likeLayout) prefix() string {
	if l.flat {
		return "likes/"
	}
	return "posts/"
}

// countLikes is Firestore's count() of post i's likes.
func (l likeLayout) countLikes(ctx context.Context, client *firestore.Client, i int) (int64, error) {
	q := client.Collection("posts").Doc(parentID(i)).Collection("likes").Query
	if l.flat {
		q = client.Collection("likes").Where("postId", "==", postValue(i))
	}
	res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("count() of %s's likes: %w", parentID(i), err)
	}
	return aggregateInt(res["n"]), nil
}

// likeState is which likes exist or are being changed, and per post the count and last change.
type likeState struct {
	mu sync.Mutex
	// post is the post of each existing like, by slot; busy slots are being changed.
	post       map[int]int
	busy       map[int]bool
	count      []int64
	lastChange []time.Time
	// updated is each existing like's update time; keys, per post, each committed change's key
	// and delta (a move's key is in both posts').
	updated map[int]time.Time
	keys    []map[string]int64
	// at is when each change's version was made or removed, by key.
	at    map[string]time.Time
	path  map[string]string
	moves int64
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
	st := &likeState{post: map[int]int{}, busy: map[int]bool{}, count: make([]int64, o.parents), lastChange: make([]time.Time, o.parents),
		updated: map[int]time.Time{}, keys: make([]map[string]int64, o.parents), at: map[string]time.Time{}, path: map[string]string{}}
	for i := range st.keys {
		st.keys[i] = map[string]int64{}
	}
	return st
}

// record notes a committed change of slot s's like at path from post from to post to (-1: none),
// answered at done; at is its update time (a delete's: done).
func (st *likeState) record(s int, path string, from, to int, at, done time.Time) {
	var newAt time.Time
	if to >= 0 {
		newAt = at
	}
	key := changeKey(path, st.updated[s], newAt)
	st.at[key], st.path[key] = at, path
	if from >= 0 {
		st.count[from]--
		st.keys[from][key] = -1
		st.lastChange[from] = done
	}
	delete(st.post, s)
	delete(st.updated, s)
	if to >= 0 {
		st.count[to]++
		st.keys[to][key] = 1
		st.lastChange[to] = done
		st.post[s], st.updated[s] = to, at
	}
	if from >= 0 && to >= 0 {
		st.moves++
	}
}

// warmUp creates every like document before the load, slot s's in post s/likers, so the stack's
// bridge watches each of them (docs/development.md).
func warmUp(ctx context.Context, o options, l likeLayout, client *firestore.Client, st *likeState) error {
	bw := client.BulkWriter(ctx)
	jobs := map[int]*firestore.BulkWriterJob{}
	for s := range o.parents * o.likers {
		job, err := bw.Create(client.Doc(l.path(s)), l.data(s/o.likers))
		if err != nil {
			return fmt.Errorf("warm-up: create %s: %w", l.path(s), err)
		}
		jobs[s] = job
	}
	bw.End()
	for s, job := range jobs {
		res, err := job.Results()
		if err != nil {
			return fmt.Errorf("warm-up: create %s: %w", l.path(s), err)
		}
		st.record(s, l.path(s), -1, s/o.likers, res.UpdateTime, time.Now())
	}
	return nil
}

// documentsLoad runs o.clients clients offering o.rate changes a second for o.duration, each
// creating a random like if missing, else deleting it or (flat, one time in 1/moveShare) moving
// it to another post.
func documentsLoad(ctx context.Context, o options, l likeLayout, client *firestore.Client, st *likeState) *documentsObserved {
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
				var s int
				for {
					s = rng.IntN(o.parents * o.likers)
					if !st.busy[s] {
						break
					}
				}
				st.busy[s] = true
				from, exists := st.post[s]
				to := -1
				switch {
				case !exists:
					from, to = -1, s/o.likers
					if l.flat {
						to = rng.IntN(o.parents)
					}
				case l.flat && o.parents > 1 && rng.Float64() < moveShare:
					to = (from + 1 + rng.IntN(o.parents-1)) % o.parents
				}
				st.mu.Unlock()
				path := l.path(s)
				ref := client.Doc(path)
				began := time.Now()
				mu.Lock()
				second(&obs.offered, began)
				mu.Unlock()
				var err error
				var res *firestore.WriteResult
				switch {
				case from < 0:
					res, err = ref.Create(ctx, l.data(to))
				case to < 0:
					_, err = ref.Delete(ctx, firestore.Exists)
				default:
					res, err = ref.Update(ctx, []firestore.Update{{Path: "postId", Value: postValue(to)}})
				}
				done := time.Now()
				st.mu.Lock()
				delete(st.busy, s)
				if err == nil {
					at := done
					if res != nil {
						at = res.UpdateTime
					}
					st.record(s, path, from, to, at, done)
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

// documentKind names a document's kind for the writes- and reads-per-change splits; a collection
// (a read log's query) is named by its ID.
func documentKind(schema shared.Schema) func(doc string) string {
	return func(doc string) string {
		segs := strings.Split(doc, "/")
		switch {
		case len(segs)%2 == 1:
			return "queries of " + segs[len(segs)-1]
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
		case segs[len(segs)-2] == "likes":
			return "app: likes"
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
		return run, fmt.Errorf("unknown mode %q of -via documents: use collection, field or write-time", p.mode)
	}
	layout, ours := layoutOf(p.mode, o), p.mode != "write-time"
	doc := &loadreport.Documents{Counting: counting, Parents: o.parents, Copies: o.copies}
	run.Documents = doc
	logDir, err := os.MkdirTemp("", "bench-"+p.mode+"-")
	if err != nil {
		return run, err
	}
	// The stack counts likes only in our modes: the declaration file is the run's own.
	declared := "[]"
	if ours {
		declared = layout.declaration()
	}
	sourcesFile := filepath.Join(logDir, "counter-sources.json")
	if err := os.WriteFile(sourcesFile, []byte(declared), 0o644); err != nil {
		return run, err
	}
	readLog := filepath.Join(logDir, "reads.jsonl")
	env := []string{"COUNTER_SOURCES=" + sourcesFile, fmt.Sprintf("LOCALSTACK_EVENT_COPIES=%d", o.copies), commitlog.EnvReadsPath + "=" + readLog}
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

	commitFile, readFile := s.commitLog, readLog
	var guide *writeTimeAggregation
	var guideBridge *localstack.EventBridge
	if p.mode == "write-time" {
		if guide, guideBridge, commitFile, readFile, err = startWriteTimeAggregation(ctx, s, logDir, o.copies, o.writeTimeInFlight); err != nil {
			return run, err
		}
		defer guideBridge.Stop()
		defer guide.client.Close()
	}

	// Every like exists and is counted before the load (warmUp says why).
	st := newLikeState(o)
	fmt.Fprintf(os.Stderr, "  warm-up: creating %d likes\n", o.parents*o.likers)
	if err := warmUp(ctx, o, layout, client, st); err != nil {
		return run, err
	}
	warmDeadline := time.Now().Add(5 * time.Minute)
	if guide == nil {
		for i := 0; i < o.parents; {
			c, err := exactCount(s.functionsURL, layout.counter(i))
			if time.Now().After(warmDeadline) {
				return run, fmt.Errorf("warm-up: counter %s never reached %d (last %d, %v)", layout.counter(i), st.count[i], c, err)
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
		if ours {
			refs[i] = schema.RollupRef(client, layout.counter(i))
		} else {
			refs[i] = client.Collection("posts").Doc(parentID(i))
		}
	}
	valueOf := func(snap *firestore.DocumentSnapshot) (int64, bool) {
		if !snap.Exists() {
			return 0, false
		}
		field := likesField
		if ours {
			field = shared.FieldCount
		}
		v, err := snap.DataAt(field)
		n, ok := v.(int64)
		return n, err == nil && ok
	}
	values := watchValues(ctx, refs, valueOf)
	defer values.close()
	fmt.Fprintf(os.Stderr, "  warm-up done; the load starts\n")
	obs := documentsLoad(ctx, o, layout, client, st)
	if obs.firstErr != nil {
		fmt.Fprintf(os.Stderr, "  %d changes failed, the first: %v\n", obs.failed, obs.firstErr)
	}
	doc.Changes, doc.Failed, doc.Moves = obs.changes, obs.failed, st.moves
	doc.ChangesPerSecond = float64(obs.changes) / obs.end.Sub(obs.start).Seconds()
	fmt.Fprintf(os.Stderr, "  %d changes in %s (%.0f/s); waiting for the counts\n", obs.changes, obs.end.Sub(obs.start).Round(time.Millisecond), doc.ChangesPerSecond)

	// A change whose commit failed may have been applied: the counts to reach are count()'s.
	for i := range o.parents {
		want, err := layout.countLikes(ctx, client, i)
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
	} else if records, err := s.deliveries(layout.prefix()); err == nil {
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
		want, err := layout.countLikes(ctx, client, i)
		if err != nil {
			return run, err
		}
		if want != obs.state.count[i] {
			return run, fmt.Errorf("count() of %s's likes changed after the load: %d, then %d", parentID(i), obs.state.count[i], want)
		}
		got, _ := valueOf(snaps[i])
		if ours {
			if c, err := exactCount(s.functionsURL, layout.counter(i)); err == nil && c != got {
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
	if ours && len(wrong) > 0 {
		if doc.InDelivery > 0 {
			fmt.Fprintf(os.Stderr, "  %d events were still in delivery: changes missing below may be among them, not lost\n", doc.InDelivery)
		}
		if err := auditLedgers(ctx, client, schema, layout, obs.state, wrong); err != nil {
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
	if !ours { // its drift is what the run measures; only ours must be exact
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
	reads, err := commitlog.ReadFile(readFile)
	if err != nil {
		return run, fmt.Errorf("read log: %w", err)
	}
	run.CountDocumentReads(reads, obs.start, settled, documentKind(schema))
	return run, nil
}

// startWriteTimeAggregation serves writeTimeAggregation on loopback, recording its commits and
// reads in logDir (the files returned), and feeds it the likes' events, each copies times, inFlight
// at once.
func startWriteTimeAggregation(ctx context.Context, s *stack, logDir string, copies, inFlight int) (g *writeTimeAggregation, b *localstack.EventBridge, commitFile, readFile string, err error) {
	commitFile, readFile = filepath.Join(logDir, "write-time-commits.jsonl"), filepath.Join(logDir, "write-time-reads.jsonl")
	f, err := os.Create(commitFile)
	if err != nil {
		return nil, nil, "", "", err
	}
	reads, err := os.Create(readFile)
	if err != nil {
		return nil, nil, "", "", err
	}
	opt, err := commitlog.NewRecorder(f).RecordReads(reads).EmulatorOption(s.firestore)
	if err != nil {
		return nil, nil, "", "", err
	}
	client, err := firestore.NewClient(ctx, s.project, opt)
	if err != nil {
		return nil, nil, "", "", err
	}
	g = &writeTimeAggregation{client: client, ids: map[string]int{}}
	url, err := serveWriteTime(g)
	if err != nil {
		return nil, nil, "", "", err
	}
	logs, err := os.Create(filepath.Join(logDir, "write-time-bridge.log"))
	if err != nil {
		return nil, nil, "", "", err
	}
	b, err = localstack.WatchDocuments(ctx, logs, s.firestore, s.project, "google.cloud.firestore.document.v1.written", likesPattern, url, inFlight, copies)
	if err != nil {
		return nil, nil, "", "", err
	}
	return g, b, commitFile, readFile, nil
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
func auditLedgers(ctx context.Context, client *firestore.Client, schema shared.Schema, l likeLayout, st *likeState, wrong map[int]int64) error {
	for i := range st.keys {
		if _, ok := wrong[i]; !ok {
			continue
		}
		csnap, err := schema.CounterRef(client, l.counter(i)).Get(ctx)
		if err != nil {
			return err
		}
		base, _ := csnap.Data()[shared.FieldBaseAt].(time.Time)
		snaps, err := schema.CounterRef(client, l.counter(i)).Collection(shared.ChangeLedgerCollection).Documents(ctx).GetAll()
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
			l.counter(i), wrong[i], base.Format("15:04:05.000000"), len(st.keys[i]), len(counted), missing, missingSum, afterBase, afterBaseSum, extra, extraSum)
	}
	return nil
}
