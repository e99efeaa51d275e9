package sources_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/sources"
)

var schema = shared.Schema{Counters: "counters", Rollups: "rollups", Dedupe: "counter_dedupe", Tops: "tops"}

const declarations = `[
  {"documents": "posts/{post}/likes/{like}", "counter": "likes-{post}"},
  {"documents": "shops/{shop}/orders/{order}", "counter": "revenue-{shop}", "sum": "amount", "where": {"paid": true}}
]`

// writer writes documents and records each write as the event Firestore would send.
type writer struct {
	t      *testing.T
	client *firestore.Client
	mu     sync.Mutex
	now    map[string]*firestorepb.Document
	writes []sources.Write
}

func newWriter(t *testing.T, client *firestore.Client) *writer {
	return &writer{t: t, client: client, now: map[string]*firestorepb.Document{}}
}

// set writes data to path (nil: deletes it) and records the write.
func (w *writer) set(path string, data map[string]any) sources.Write {
	w.t.Helper()
	ctx := context.Background()
	var res *firestore.WriteResult
	var err error
	if data == nil {
		res, err = w.client.Doc(path).Delete(ctx)
	} else {
		res, err = w.client.Doc(path).Set(ctx, data)
	}
	if err != nil {
		w.t.Fatalf("write %s: %v", path, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.now[path]
	var doc *firestorepb.Document
	if data != nil {
		doc = &firestorepb.Document{Name: path, Fields: values(data), UpdateTime: timestamppb.New(res.UpdateTime)}
	}
	w.now[path] = doc
	if old == nil && doc == nil {
		return sources.Write{}
	}
	wr := sources.Write{Path: path, Old: old, New: doc, Time: res.UpdateTime}
	if doc == nil {
		wr.Time = time.Now() // a delete's WriteResult has no time; the emulator runs on this clock
	}
	w.writes = append(w.writes, wr)
	return wr
}

func values(data map[string]any) map[string]*firestorepb.Value {
	out := map[string]*firestorepb.Value{}
	for k, v := range data {
		switch x := v.(type) {
		case int:
			out[k] = &firestorepb.Value{ValueType: &firestorepb.Value_IntegerValue{IntegerValue: int64(x)}}
		case int64:
			out[k] = &firestorepb.Value{ValueType: &firestorepb.Value_IntegerValue{IntegerValue: x}}
		case float64:
			out[k] = &firestorepb.Value{ValueType: &firestorepb.Value_DoubleValue{DoubleValue: x}}
		case string:
			out[k] = &firestorepb.Value{ValueType: &firestorepb.Value_StringValue{StringValue: x}}
		case bool:
			out[k] = &firestorepb.Value{ValueType: &firestorepb.Value_BooleanValue{BooleanValue: x}}
		default:
			panic(fmt.Sprintf("value %T", v))
		}
	}
	return out
}

// project is a fresh emulator project's client, and how to start a functions instance on it that
// keeps the counters of declarations.
func project(t *testing.T) (*firestore.Client, func() *sources.Counting) {
	t.Helper()
	id := testenv.Project(t)
	set, err := sources.Parse([]byte(declarations), schema)
	if err != nil {
		t.Fatal(err)
	}
	return testenv.FirestoreOf(t, id), func() *sources.Counting { return instance(t, id, set) }
}

// instance is one functions instance: its own client, Store and Counting.
func instance(t *testing.T, project string, set *sources.Set) *sources.Counting {
	return instanceOf(t, testenv.FirestoreOf(t, project), set)
}

// instanceOf is one functions instance over client.
func instanceOf(t *testing.T, client *firestore.Client, set *sources.Set) *sources.Counting {
	return instanceWith(t, client, set, counter.Options{DefaultNumShards: 3, ShardCountCacheTTL: time.Minute,
		GroupCommitInterval: 50 * time.Millisecond, DedupeTTL: 24 * time.Hour}, 50*time.Millisecond)
}

// instanceWith is one functions instance over client whose Store has opts, committing a counter's
// changes once per commitInterval.
func instanceWith(t *testing.T, client *firestore.Client, set *sources.Set, opts counter.Options, commitInterval time.Duration) *sources.Counting {
	store := counter.NewStore(client, schema, opts)
	counting := sources.NewCounting(set, store, client, quietLog, commitInterval)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = counting.Close(ctx)
		_ = store.Increments.Close(ctx)
	})
	return counting
}

// recordedInstances is n functions instances of declarations in one fresh project, each over a
// client of its own (newInstance), whose commits are recorded in one log.
func recordedInstances(t *testing.T, n int, newInstance func(*firestore.Client, *sources.Set) *sources.Counting) ([]*firestore.Client, []*sources.Counting, func() []commitlog.Commit) {
	clients, commits := testenv.FirestoreInstancesWithCommits(t, n)
	set, err := sources.Parse([]byte(declarations), schema)
	if err != nil {
		t.Fatal(err)
	}
	var instances []*sources.Counting
	for _, c := range clients {
		instances = append(instances, newInstance(c, set))
	}
	return clients, instances, commits
}

// quietLog discards the instances' logs.
var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// deliver applies every write 1 to 3 times, shuffled, from 4 goroutines spread over instances,
// each retrying until its write is applied.
func deliver(t *testing.T, writes []sources.Write, instances ...*sources.Counting) sources.Outcomes {
	var mu sync.Mutex
	var total sources.Outcomes
	var events []sources.Write
	for _, w := range writes {
		for range 1 + rand.IntN(3) {
			events = append(events, w)
		}
	}
	rand.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < len(events); i += 4 {
				for attempt := 1; ; attempt++ {
					tally, err := instances[i%len(instances)].Count(context.Background(), events[i])
					if err == nil {
						mu.Lock()
						total.Counted += tally.Counted
						total.Duplicate += tally.Duplicate
						total.InBase += tally.InBase
						total.OutOfRange += tally.OutOfRange
						mu.Unlock()
						break
					}
					if attempt == 10 {
						t.Errorf("count %s: %v", events[i].Path, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	return total
}

// aggregate is Firestore's own count() or sum(amount) over a collection, where paid == true for sums.
func aggregate(t *testing.T, client *firestore.Client, collection string, sum bool) int64 {
	q := client.Collection(collection).Query
	agg := q.NewAggregationQuery().WithCount("v")
	if sum {
		paid := q.Where("paid", "==", true)
		agg = paid.NewAggregationQuery().WithSum("amount", "v")
	}
	res, err := agg.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res["v"].(*firestorepb.Value).GetIntegerValue()
}

// checkExact compares every counter with Firestore's aggregation of its documents.
func checkExact(t *testing.T, client *firestore.Client, store func(id string) int64, posts, shops int) {
	t.Helper()
	for p := range posts {
		want := aggregate(t, client, fmt.Sprintf("posts/p%d/likes", p), false)
		if got := store(fmt.Sprintf("likes-p%d", p)); got != want {
			t.Errorf("likes-p%d = %d, count() of its documents = %d", p, got, want)
		}
	}
	for s := range shops {
		want := aggregate(t, client, fmt.Sprintf("shops/s%d/orders", s), true)
		if got := store(fmt.Sprintf("revenue-s%d", s)); got != want {
			t.Errorf("revenue-s%d = %d, sum(amount) of its paid documents = %d", s, got, want)
		}
	}
}

func sumOf(t *testing.T, client *firestore.Client) func(id string) int64 {
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 3})
	return func(id string) int64 {
		n, err := store.Reader.Sum(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// randomWrites makes n random writes: creates, deletes and re-creates, updates moving documents into
// and out of where, sums changed, removed or made non-integer.
func randomWrites(w *writer, n, posts, shops int) {
	for range n {
		if rand.IntN(2) == 0 {
			path := fmt.Sprintf("posts/p%d/likes/u%d", rand.IntN(posts), rand.IntN(5))
			if rand.IntN(3) == 0 {
				w.set(path, nil)
			} else {
				w.set(path, map[string]any{"at": rand.IntN(1000)})
			}
			continue
		}
		path := fmt.Sprintf("shops/s%d/orders/o%d", rand.IntN(shops), rand.IntN(5))
		switch rand.IntN(5) {
		case 0:
			w.set(path, nil)
		case 1:
			w.set(path, map[string]any{"paid": rand.IntN(2) == 0})
		case 2:
			w.set(path, map[string]any{"paid": true, "amount": "12"})
		default:
			w.set(path, map[string]any{"paid": rand.IntN(3) > 0, "amount": 1 + rand.IntN(100)})
		}
	}
}

func TestCollectionCountersEqualFirestoresAggregationWhateverTheEventsDo(t *testing.T) {
	client, newInstance := project(t)
	a, b := newInstance(), newInstance()
	// A first document per counter makes its base, so that what follows is counted by events.
	first := newWriter(t, client)
	for p := range 3 {
		first.set(fmt.Sprintf("posts/p%d/likes/first", p), map[string]any{"at": 0})
	}
	for s := range 2 {
		first.set(fmt.Sprintf("shops/s%d/orders/first", s), map[string]any{"paid": true, "amount": 7})
	}
	deliver(t, first.writes, a)
	w := newWriter(t, client)
	randomWrites(w, 120, 3, 2)
	tally := deliver(t, w.writes, a, b)
	checkExact(t, client, sumOf(t, client), 3, 2)
	if tally.Counted == 0 || tally.Duplicate == 0 {
		t.Fatalf("%+v: the events must count writes and meet duplicates", tally)
	}
}

func TestBackfillRacingWritesCountsEachDocumentOnce(t *testing.T) {
	client, newInstance := project(t)
	// Documents written before the counters were declared: their events may come late, or never.
	before := newWriter(t, client)
	randomWrites(before, 60, 2, 2)
	w := &writer{t: t, client: client, now: before.now}
	a, b := newInstance(), newInstance()
	var wg sync.WaitGroup
	wg.Go(func() { randomWrites(w, 80, 2, 2) })
	// The first events make the bases while the writes go on.
	wg.Go(func() {
		for range 20 {
			w.mu.Lock()
			writes := append([]sources.Write(nil), w.writes...)
			w.mu.Unlock()
			deliver(t, writes, a, b)
		}
	})
	wg.Wait()
	deliver(t, append(before.writes, w.writes...), b, a)
	checkExact(t, client, sumOf(t, client), 2, 2)
}

func TestVerifyFindsDriftAndRepairFixesItWhileEventsFlow(t *testing.T) {
	client, newInstance := project(t)
	a, b := newInstance(), newInstance()
	w := newWriter(t, client)
	randomWrites(w, 30, 1, 1)
	deliver(t, w.writes, a)
	ctx := context.Background()
	// Drift: a shard changed behind the counters' back (say, by a hand-made write).
	if _, err := client.Doc("counters/likes-p0/shards/0").Set(ctx, map[string]any{"count": firestore.Increment(5)}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	drift, err := a.Verify(ctx, "likes-p0", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if drift.Value != drift.Documents+5 {
		t.Fatalf("verify: %+v, want the counter 5 above its documents", drift)
	}
	// Repair while documents change and their events are counted, duplicated, on two instances.
	more := &writer{t: t, client: client, now: w.now}
	var wg sync.WaitGroup
	wg.Go(func() { randomWrites(more, 40, 1, 1) })
	wg.Go(func() {
		if err := b.Repair(ctx, "likes-p0"); err != nil {
			t.Error(err)
		}
	})
	wg.Go(func() {
		for range 5 {
			more.mu.Lock()
			writes := append([]sources.Write(nil), more.writes...)
			more.mu.Unlock()
			deliver(t, writes, a, b)
		}
	})
	wg.Wait()
	deliver(t, more.writes, b, a)
	checkExact(t, client, sumOf(t, client), 1, 1)
	if drift, err := a.Verify(ctx, "likes-p0", time.Now()); err != nil || drift.Value != drift.Documents {
		t.Errorf("verify after repair: %+v %v", drift, err)
	}
}

// TestQuietCheckRepairsTheDriftedCounterOnly: of two quiet counters, the check finds the one whose
// shard was changed behind the counters' back, and repairs it.
func TestQuietCheckRepairsTheDriftedCounterOnly(t *testing.T) {
	client, newInstance := project(t)
	a := newInstance()
	w := newWriter(t, client)
	for p := range 2 {
		w.set(fmt.Sprintf("posts/p%d/likes/u1", p), map[string]any{"at": 1})
	}
	deliver(t, w.writes, a)
	ctx := context.Background()
	if _, err := client.Doc("counters/likes-p0/shards/0").Set(ctx, map[string]any{"count": firestore.Increment(5)}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	quietSince := shared.UnixMinute(time.Now().Add(-5 * time.Minute))
	for p := range 2 {
		if _, err := client.Doc(fmt.Sprintf("counters/likes-p%d", p)).Update(ctx, []firestore.Update{{Path: shared.FieldTouchedMinute, Value: quietSince}}); err != nil {
			t.Fatal(err)
		}
	}
	check, err := a.CheckQuiet(ctx, client.Collection(schema.Counters), client.Doc("counters_sweep/drift"), time.Now(), 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if drifts := check.Drifts; len(drifts) != 1 || drifts[0].Counter != "likes-p0" || drifts[0].Value != drifts[0].Documents+5 {
		t.Errorf("drifts %+v, want likes-p0 alone, 5 above its documents", drifts)
	}
	if drift, err := a.Verify(ctx, "likes-p0", time.Now()); err != nil || drift.Value != drift.Documents {
		t.Errorf("likes-p0 after the check: %+v %v; want it repaired", drift, err)
	}
}

// TestDriftChecksAreNotStarved: 30 quiet collection counters among 40 quiet ordinary ones, one of
// them no longer declared: successive checks verify each collection counter in turn, and find the
// drifted one last in line (once: it is repaired); the one that cannot be verified is reported and
// skipped.
func TestDriftChecksAreNotStarved(t *testing.T) {
	client, newInstance := project(t)
	a := newInstance()
	ctx := context.Background()
	w := newWriter(t, client)
	for p := range 30 {
		w.set(fmt.Sprintf("posts/p%02d/likes/u1", p), map[string]any{"at": 1})
	}
	deliver(t, w.writes, a)
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 1})
	for n := range 40 {
		if _, err := store.Increments.Increment(ctx, counter.Request{Counter: fmt.Sprintf("junk-%02d", n), Delta: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.Doc("counters/likes-p29/shards/0").Set(ctx, map[string]any{"count": firestore.Increment(2)}, firestore.MergeAll); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Doc("counters/likes-p05").Update(ctx, []firestore.Update{{Path: shared.FieldSource, Value: "gone of nowhere/{x}"}}); err != nil {
		t.Fatal(err)
	}
	quietSince := shared.UnixMinute(time.Now().Add(-5 * time.Minute))
	snaps, err := client.Collection(schema.Counters).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range snaps {
		if _, err := snap.Ref.Update(ctx, []firestore.Update{{Path: shared.FieldTouchedMinute, Value: quietSince}}); err != nil {
			t.Fatal(err)
		}
	}
	var drifted []string
	unverified := map[string]string{}
	for range 3 {
		check, err := a.CheckQuiet(ctx, client.Collection(schema.Counters), client.Doc("counters_sweep/drift"), time.Now(), 3*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range check.Drifts {
			drifted = append(drifted, d.Counter)
		}
		maps.Copy(unverified, check.Unverified)
	}
	if !slices.Equal(drifted, []string{"likes-p29"}) {
		t.Errorf("three checks found drift in %v, want likes-p29 alone, once", drifted)
	}
	if _, ok := unverified["likes-p05"]; len(unverified) != 1 || !ok {
		t.Errorf("unverified %v, want likes-p05 alone", unverified)
	}
}

// TestFirstEventsOnManyInstancesMakeOneBase: likes written before their counter exists, whose first
// events reach four instances at once (a burst over a fresh counter), are each counted once.
func TestFirstEventsOnManyInstancesMakeOneBase(t *testing.T) {
	client, newInstance := project(t)
	w := newWriter(t, client)
	for u := range 20 {
		w.set(fmt.Sprintf("posts/p0/likes/u%d", u), map[string]any{"at": u})
	}
	deliver(t, w.writes, newInstance(), newInstance(), newInstance(), newInstance())
	checkExact(t, client, sumOf(t, client), 1, 0)
}

// TestBaseStampedBeforeItsCommitCountsOnce: a new base stamp whose value precedes a correction
// committed before the stamp (the emulator sets a server timestamp before the write waits for the
// completing transaction's lock, as a 4-instance bench warm-up showed) is completed once, not by
// adding the correction again.
func TestBaseStampedBeforeItsCommitCountsOnce(t *testing.T) {
	client, newInstance := project(t)
	ctx := context.Background()
	w := newWriter(t, client)
	for u := range 20 {
		w.set(fmt.Sprintf("posts/p0/likes/u%d", u), map[string]any{"at": u})
	}
	counting := newInstance()
	deliver(t, w.writes[:1], counting) // the base: a correction of 20
	ref := client.Collection(schema.Counters).Doc("likes-p0")
	snap, err := ref.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	corrected := snap.Data()[shared.FieldBaseAt].(time.Time)
	if _, err := ref.Update(ctx, []firestore.Update{
		{Path: shared.FieldBaseAt, Value: corrected.Add(-time.Millisecond)},
		{Path: shared.FieldBaseDone, Value: false},
	}); err != nil {
		t.Fatal(err)
	}
	more := newWriter(t, client)
	more.set("posts/p0/likes/late", map[string]any{"at": 20})
	deliver(t, more.writes, counting)
	checkExact(t, client, sumOf(t, client), 1, 0)
}

// TestNonIntegerSumsCountZeroFromTheBase: a summed value that is not an integer counts 0 whether
// the base holds it (sum() then answers a double) or a change brings it.
func TestNonIntegerSumsCountZeroFromTheBase(t *testing.T) {
	client, newInstance := project(t)
	w := newWriter(t, client)
	w.set("shops/s0/orders/a", map[string]any{"paid": true, "amount": 10})
	w.set("shops/s0/orders/b", map[string]any{"paid": true, "amount": 2.5})
	w.set("shops/s0/orders/c", map[string]any{"paid": true, "amount": 4})
	counting := newInstance()
	deliver(t, w.writes[:1], counting) // the base holds all three
	w.set("shops/s0/orders/d", map[string]any{"paid": true, "amount": 0.5})
	w.set("shops/s0/orders/b", map[string]any{"paid": true, "amount": 3})
	deliver(t, w.writes[1:], counting)
	if got := sumOf(t, client)("revenue-s0"); got != 17 {
		t.Errorf("revenue-s0 = %d, want 17: 10 + 4 + 3, the non-integer 2.5 (in the base) and 0.5 (a change) counting 0", got)
	}
}

// TestInstancesStampACounterOnceAMinute: three more instances counting one counter's likes write
// its counter document (touched_minute) only when its stamp is older than their minute, not once
// each on their first commit.
func TestInstancesStampACounterOnceAMinute(t *testing.T) {
	clients, instances, commits := recordedInstances(t, 4, func(c *firestore.Client, set *sources.Set) *sources.Counting {
		return instanceOf(t, c, set)
	})
	first := newWriter(t, clients[0])
	first.set("posts/p0/likes/first", map[string]any{"at": 0})
	deliver(t, first.writes, instances[0]) // the base, stamped by instance 0
	before := len(commits())
	w := newWriter(t, clients[0])
	for u := range 40 {
		w.set(fmt.Sprintf("posts/p0/likes/u%d", u), map[string]any{"at": u})
	}
	deliver(t, w.writes, instances...)
	checkExact(t, clients[0], sumOf(t, clients[0]), 1, 0)
	stamps := 0
	for _, c := range commits()[before:] {
		if slices.Contains(c.Docs, "counters/likes-p0") {
			stamps++
		}
	}
	// Instances' minutes differ by one at most (their stamps' random offsets), once more across a boundary.
	if stamps > 2 {
		t.Errorf("the counter document was written %d times by four instances' changes, want at most 2", stamps)
	}
}

// TestNoDocumentChangesAReservedCounter: a like whose post ID makes a counter ID of the deployment's
// own (the SLO canary's) is counted nowhere, and the canary is left alone.
func TestNoDocumentChangesAReservedCounter(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	set, err := sources.Parse([]byte(`[{"documents": "posts/{post}/likes/{like}", "counter": "{post}"}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, client)
	tally, err := instance(t, id, set).Count(context.Background(), w.set("posts/_counters_canary/likes/u1", map[string]any{"at": 1}))
	if err != nil || tally.Unmatched != 1 || tally.Counted != 0 {
		t.Errorf("Count = %+v, %v: want the like unmatched and nothing counted", tally, err)
	}
	if paths := testenv.DocumentPaths(t, client); slices.ContainsFunc(paths, func(p string) bool { return strings.HasPrefix(p, schema.Counters+"/") }) {
		t.Errorf("documents %v: a like under a reserved post ID wrote a counter", paths)
	}
}

// TestADocumentNeverTakesOverAnotherCounter: a like whose counter ID names an ordinary counter (made
// by increments) or a counter of another declaration changes neither; the write is refused, not
// failed (no redelivery), and repair refuses the ordinary counter too.
func TestADocumentNeverTakesOverAnotherCounter(t *testing.T) {
	client, newInstance := project(t)
	ctx := context.Background()
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 3})
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "likes-launch", Delta: 5}); err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, client)
	counting := newInstance()
	tally, err := counting.Count(ctx, w.set("posts/launch/likes/u1", map[string]any{"at": 1}))
	if err != nil || len(tally.Refused) != 1 || tally.Counted != 0 {
		t.Errorf("a like on an ordinary counter: %+v, %v; want it refused, without error", tally, err)
	}
	if got := sumOf(t, client)("likes-launch"); got != 5 {
		t.Errorf("likes-launch = %d, want the 5 increments alone", got)
	}
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "likes-launch", Delta: 1}); err != nil {
		t.Errorf("increment likes-launch after the like: %v, want it still an ordinary counter", err)
	}
	if err := counting.Repair(ctx, "likes-launch"); !errors.Is(err, sources.ErrNotItsCounter) {
		t.Errorf("repair of an ordinary counter: %v, want ErrNotItsCounter", err)
	}

	// Another deployment's declaration whose template makes the same ID as a counter of ours.
	deliver(t, []sources.Write{w.set("posts/p0/likes/u1", map[string]any{"at": 1})}, counting)
	other, err := sources.Parse([]byte(`[{"documents": "photos/{photo}/likes/{like}", "counter": "likes-{photo}"}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	tally, err = instanceOf(t, client, other).Count(ctx, w.set("photos/p0/likes/u9", map[string]any{"at": 1}))
	if err != nil || len(tally.Refused) != 1 {
		t.Errorf("a photo like on the post counter likes-p0: %+v, %v; want it refused", tally, err)
	}
	checkExact(t, client, sumOf(t, client), 1, 0)
}

// TestMadeUpParentsMakeNoCounters: likes under post IDs that the declaration's counter_id_pattern,
// or else the deployment's COUNTER_ID_PATTERN, refuses make no counter and are acknowledged.
func TestMadeUpParentsMakeNoCounters(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	ctx := context.Background()
	set, err := sources.Parse([]byte(`[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{post}", "counter_id_pattern": "likes-p[0-9]+"},
	  {"documents": "notes/{note}/stars/{star}", "counter": "stars-{note}"}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	set.InheritCounterIDPattern(regexp.MustCompile(`^(?:stars-n[0-9]+)$`))
	counting := instance(t, id, set)
	w := newWriter(t, client)
	for path, counted := range map[string]bool{
		"posts/p1/likes/u1": true, "posts/made-up/likes/u1": false, "posts/p1x/likes/u1": false,
		"notes/n7/stars/u1": true, "notes/junk/stars/u1": false,
	} {
		tally, err := counting.Count(ctx, w.set(path, map[string]any{"at": 1}))
		if err != nil || (tally.Counted+tally.InBase == 1) != counted || (tally.Unmatched == 1) == counted {
			t.Errorf("%s: %+v, %v; want counted %v (its first like is in the base)", path, tally, err, counted)
		}
	}
	for _, p := range testenv.DocumentPaths(t, client) {
		if strings.HasPrefix(p, schema.Counters+"/") && !strings.HasPrefix(p, schema.Counters+"/likes-p1") && !strings.HasPrefix(p, schema.Counters+"/stars-n7") {
			t.Errorf("%s: a refused counter ID made a document", p)
		}
	}
}

// TestWhereEqualityIsFirestores: integers and doubles near 2^53 and 2^63, changed after the base,
// count as Firestore's == counts them (count() of the same where on the emulator).
func TestWhereEqualityIsFirestores(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	set, err := sources.Parse([]byte(`[{"documents": "polls/{poll}/votes/{vote}", "counter": "votes-{poll}", "where": {"n": 9007199254740992.0}}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	counting := instance(t, id, set)
	w := newWriter(t, client)
	w.set("polls/p/votes/first", map[string]any{"n": "none"})
	deliver(t, w.writes, counting) // the base
	before := len(w.writes)
	for i, n := range []any{1<<53 + 1, 1 << 53, float64(1 << 53), 1<<53 - 1, float64(1 << 63), math.MaxInt64, math.MinInt64} {
		w.set(fmt.Sprintf("polls/p/votes/v%d", i), map[string]any{"n": n})
	}
	deliver(t, w.writes[before:], counting)
	q := client.Collection("polls/p/votes").Where("n", "==", float64(1<<53))
	res, err := q.NewAggregationQuery().WithCount("v").Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := res["v"].(*firestorepb.Value).GetIntegerValue()
	if got := sumOf(t, client)("votes-p"); got != want || want != 2 {
		t.Errorf("votes-p = %d, count() where n == 2^53 (a double) = %d, want both 2 (the integer and the double 2^53)", got, want)
	}
}

// TestScaledSumsCountDecimalsExactly: a sum with "scale": 2 counts amounts in cents, from the base
// (documents read one by one) and from changes alike; an amount with three decimals counts 0, and
// verify agrees.
func TestScaledSumsCountDecimalsExactly(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	set, err := sources.Parse([]byte(`[{"documents": "shops/{shop}/orders/{order}", "counter": "cents-{shop}", "sum": "amount", "scale": 2}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	counting := instance(t, id, set)
	w := newWriter(t, client)
	for o, amount := range []any{12.5, 0.1, 1.005, 3} {
		w.set(fmt.Sprintf("shops/s/orders/o%d", o), map[string]any{"amount": amount})
	}
	deliver(t, w.writes[:1], counting) // the base: 1250 + 10 + 0 + 300
	before := len(w.writes)
	w.set("shops/s/orders/o4", map[string]any{"amount": 2.25})
	w.set("shops/s/orders/o1", nil)
	deliver(t, w.writes[before:], counting)
	if got := sumOf(t, client)("cents-s"); got != 1775 {
		t.Errorf("cents-s = %d, want 1775: 12.50 + 3 + 2.25 in cents, 1.005 counting 0", got)
	}
	drift, err := counting.Verify(context.Background(), "cents-s", time.Now())
	if err != nil || drift.Value != drift.Documents {
		t.Errorf("verify: %+v, %v; want the counter equal to its documents", drift, err)
	}
}

// TestTwoWildcardsNeverShareACounter: with a template of two wildcards, documents whose values
// would run together ("1-2" and "3", "1" and "2-3") count in counters of their own, found again
// from their IDs by verify and repair.
func TestTwoWildcardsNeverShareACounter(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	set, err := sources.Parse([]byte(`[{"documents": "a/{x}/b/{y}/c/{z}", "counter": "k-{x}-{y}"}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	counting := instance(t, id, set)
	w := newWriter(t, client)
	w.set("a/1-2/b/3/c/u", map[string]any{"at": 1})
	w.set("a/1/b/2-3/c/u", map[string]any{"at": 1})
	w.set("a/1/b/2-3/c/v", map[string]any{"at": 1})
	deliver(t, w.writes, counting)
	ctx := context.Background()
	for counterID, want := range map[string]int64{"k-1%2D2-3": 1, "k-1-2%2D3": 2} {
		if got := sumOf(t, client)(counterID); got != want {
			t.Errorf("%s = %d, want %d", counterID, got, want)
		}
		if err := counting.Repair(ctx, counterID); err != nil {
			t.Errorf("repair %s: %v", counterID, err)
		}
		if d, err := counting.Verify(ctx, counterID, time.Now()); err != nil || d.Value != want || d.Documents != want {
			t.Errorf("verify %s: %+v, %v; want %d both", counterID, d, err, want)
		}
	}
}

// TestCloseCommitsHeldChangesAtOnce: a change held for its counter's next commit (an hour away)
// commits when the instance closes, and later changes are refused.
func TestCloseCommitsHeldChangesAtOnce(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	set, err := sources.Parse([]byte(declarations), schema)
	if err != nil {
		t.Fatal(err)
	}
	counting := instanceWith(t, client, set, counter.Options{DefaultNumShards: 3, DedupeTTL: time.Hour}, time.Hour)
	w := newWriter(t, client)
	// The counter's first change commits at once (once: a second delivery would wait an hour).
	if _, err := counting.Count(context.Background(), w.set("posts/p0/likes/u0", map[string]any{"at": 0})); err != nil {
		t.Fatal(err)
	}
	second := w.set("posts/p0/likes/u1", map[string]any{"at": 1})
	held := make(chan error, 1)
	go func() {
		_, err := counting.Count(context.Background(), second)
		held <- err
	}()
	time.Sleep(500 * time.Millisecond) // the change waits in its counter's batch
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := counting.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case err := <-held:
		if err != nil {
			t.Errorf("the held change: %v, want it committed", err)
		}
	case <-ctx.Done():
		t.Fatal("the held change still waits after close")
	}
	if got := sumOf(t, client)("likes-p0"); got != 2 {
		t.Errorf("likes-p0 = %d after close, want 2", got)
	}
	if _, err := counting.Count(context.Background(), w.set("posts/p0/likes/u2", map[string]any{"at": 2})); !errors.Is(err, counter.ErrClosed) {
		t.Errorf("a change after close: %v, want ErrClosed", err)
	}
}
