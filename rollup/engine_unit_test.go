package rollup

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
)

// The engine's unit tests run on an in-memory backend and a fake clock: no emulator, no sleeps, the
// same result every time.

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// fakeClock moves only when the engine sleeps: a sleep ends at once, at the time slept until.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(max(d, 0))
	c.sleeps = append(c.sleeps, c.now)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// fakeStore is one counter's roll-up and shards in memory.
type fakeStore struct {
	clock *fakeClock

	mu            sync.Mutex
	rollup        *Document
	version       time.Time
	counterExists bool
	shape         counter.Shape
	totalsResult  counter.Totals
	totalsErr     error
	// rivalWrites are roll-ups another instance commits just before this engine's next writes.
	rivalWrites []Document
	written     []rollupWrite
	reads       int
	removed     int
	restored    int
	adapted     [][2]int
	// hoursDue is what read says of hourly buckets to prune; pruned lists when pruneHours ran.
	hoursDue bool
	pruned   []time.Time
}

func newFakeStore(clk *fakeClock) *fakeStore {
	return &fakeStore{clock: clk, counterExists: true, shape: counter.Shape{NumShards: 10, MinShards: 10, MaxShards: 1000}}
}

func (f *fakeStore) read(context.Context, string) (view, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	v := view{version: f.version, counterExists: f.counterExists, shape: f.shape, hoursDue: f.hoursDue, readAt: f.clock.Now()}
	if f.rollup != nil {
		d := *f.rollup
		v.rollup = &d
	}
	return v, nil
}

func (f *fakeStore) sums(context.Context, string, time.Time, []string) (counter.Sums, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return counter.Sums{Totals: f.totalsResult}, f.totalsErr
}

func (f *fakeStore) write(_ context.Context, _ string, prev view, w rollupWrite) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.rivalWrites) > 0 {
		d := f.rivalWrites[0]
		f.rivalWrites = f.rivalWrites[1:]
		f.rollup, f.version = &d, d.UpdatedAt
	}
	if !f.counterExists || !prev.version.Equal(f.version) || (prev.rollup == nil) != (f.rollup == nil) {
		return errConflict
	}
	f.written = append(f.written, w)
	f.rollup = &Document{Count: w.count, UpdatedAt: w.computedAt, Source: w.source, ShardWrites: w.shardWrites,
		WriteRate: w.decision.rate, CoolSince: w.decision.coolSince}
	f.version = f.clock.Now()
	return nil
}

func (f *fakeStore) removeRollup(context.Context, string, view) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed++
	f.rollup, f.version = nil, time.Time{}
	return nil
}

func (f *fakeStore) restore(context.Context, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restored++
	f.counterExists = true
	return nil
}

func (f *fakeStore) adapt(_ context.Context, _ string, from, to int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.adapted = append(f.adapted, [2]int{from, to})
	f.shape.NumShards = to
	return nil
}

func (f *fakeStore) pruneHours(_ context.Context, _ string, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruned = append(f.pruned, now)
	f.hoursDue = false
	return nil
}

func newUnitEngine() (*Engine, *fakeStore, *fakeClock) {
	clk := &fakeClock{now: t0}
	store := newFakeStore(clk)
	return newEngine(store, clk, time.Second), store, clk
}

// TestUnitRefreshWritesTheSumOnceThenIsCovered: a trigger's refresh of a quiet counter settles until
// no change joined it for a quarter of an interval (so that one computation covers a burst), then
// computes; an older change is covered without waiting.
func TestUnitRefreshWritesTheSumOnceThenIsCovered(t *testing.T) {
	e, store, clk := newUnitEngine()
	store.totalsResult = counter.Totals{Count: 10, Writes: 3, Shards: 10}
	clk.now = t0.Add(time.Second)
	out, err := e.Refresh(context.Background(), "c", t0, SourceTrigger)
	if err != nil || out != Wrote {
		t.Fatalf("first refresh: %v, %v; want Wrote", out, err)
	}
	settled := t0.Add(time.Second + time.Second/4)
	if n := len(clk.sleeps); n != 2 || !clk.sleeps[0].Equal(settled) || clk.sleeps[1].Before(settled) || !clk.sleeps[1].Before(settled.Add(time.Second/8)) {
		t.Fatalf("slept %v; want to settle until %v, then less than 125ms more", clk.sleeps, settled)
	}
	if len(store.written) != 1 || store.written[0].count != 10 || !store.written[0].computedAt.Equal(clk.sleeps[1]) {
		t.Fatalf("written %+v, want one roll-up of 10 computed once settled", store.written)
	}
	out, err = e.Refresh(context.Background(), "c", t0.Add(-time.Second), SourceTrigger)
	if err != nil || out != Covered || len(store.written) != 1 {
		t.Errorf("refresh for an older change: %v, %v, %d writes; want Covered and no write", out, err, len(store.written))
	}
	if len(clk.sleeps) != 2 {
		t.Errorf("slept %v; a covered refresh has nothing to wait for", clk.sleeps)
	}
}

// TestUnitSweepRefreshOfAQuietCounterComputesAtOnce: only a trigger's refresh settles; the sweep's
// (SourceScheduler) finds no burst to wait for.
func TestUnitSweepRefreshOfAQuietCounterComputesAtOnce(t *testing.T) {
	e, store, clk := newUnitEngine()
	store.rollup, store.version = &Document{Count: 4, UpdatedAt: t0}, t0
	store.totalsResult = counter.Totals{Count: 10, Writes: 3, Shards: 10}
	clk.now = t0.Add(time.Minute)
	if out, err := e.Refresh(context.Background(), "c", t0.Add(time.Second), SourceScheduler); err != nil || out != Wrote {
		t.Fatalf("sweep's refresh: %v, %v; want Wrote", out, err)
	}
	if len(clk.sleeps) != 0 || !store.written[0].computedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("slept %v, computed at %v; want no wait", clk.sleeps, store.written[0].computedAt)
	}
}

// TestUnitRefreshOfAChangeAheadOfEveryReadComputesOnce: a change time later than any read of the
// roll-up (a delete's arrival on an instance whose clock is ahead of Firestore's) is not a shard
// write a later read could hold: the refresh computes from its read, without reading again.
func TestUnitRefreshOfAChangeAheadOfEveryReadComputesOnce(t *testing.T) {
	e, store, clk := newUnitEngine()
	store.totalsResult = counter.Totals{Count: 3}
	clk.now = t0
	out, err := e.Refresh(context.Background(), "c", t0.Add(2*time.Second), SourceScheduler)
	if err != nil || out != Wrote || store.reads != 1 || len(store.written) != 1 {
		t.Errorf("refresh: %v, %v after %d reads and %d writes; want Wrote after one read", out, err, store.reads, len(store.written))
	}
}

func TestUnitRefreshWaitsAnIntervalAfterTheLastRollup(t *testing.T) {
	e, store, clk := newUnitEngine()
	store.rollup = &Document{Count: 5, UpdatedAt: t0}
	store.version = t0.Add(5 * time.Millisecond) // committed a little after it was computed
	store.totalsResult = counter.Totals{Count: 6}
	clk.now = t0.Add(200 * time.Millisecond)
	out, err := e.Refresh(context.Background(), "c", t0.Add(150*time.Millisecond), SourceTrigger)
	if err != nil || out != Wrote {
		t.Fatalf("refresh: %v, %v; want Wrote", out, err)
	}
	next := t0.Add(time.Second + 5*time.Millisecond) // an interval after the commit
	spread := time.Second / 8                        // instances wake apart
	if len(clk.sleeps) != 1 || clk.sleeps[0].Before(next) || !clk.sleeps[0].Before(next.Add(spread)) ||
		!store.written[0].computedAt.Equal(clk.sleeps[0]) {
		t.Errorf("slept %v, computed at %v; want one wait until %v (plus less than %v), then the computation",
			clk.sleeps, store.written[0].computedAt, next, spread)
	}
}

func TestUnitRefreshLosingARaceToACoveringRollupWritesNothing(t *testing.T) {
	e, store, clk := newUnitEngine()
	store.totalsResult = counter.Totals{Count: 7}
	clk.now = t0.Add(time.Second)
	store.rivalWrites = []Document{{Count: 7, UpdatedAt: t0.Add(2 * time.Second)}}
	out, err := e.Refresh(context.Background(), "c", t0, SourceTrigger)
	if err != nil || out != Covered || len(store.written) != 0 {
		t.Errorf("refresh that lost to a newer roll-up: %v, %v, %d writes; want Covered, no write", out, err, len(store.written))
	}
}

// TestUnitRefreshLosingManyRacesStillWrites: a refresh is bounded by time, not by the races it loses
// (it used to give up after 8).
func TestUnitRefreshLosingManyRacesStillWrites(t *testing.T) {
	e, store, clk := newUnitEngine()
	clk.now = t0.Add(time.Second)
	const lost = 20
	for i := range lost {
		// Each rival roll-up is older than the change, so it never covers it.
		store.rivalWrites = append(store.rivalWrites, Document{UpdatedAt: t0.Add(-time.Duration(lost-i) * time.Minute)})
	}
	if out, err := e.Refresh(context.Background(), "c", t0, SourceTrigger); err != nil || out != Wrote || len(store.written) != 1 {
		t.Errorf("refresh that lost %d races: %v, %v, %d writes; want Wrote, one write", lost, out, err, len(store.written))
	}
}

func TestUnitRefreshOfADeletedCounterRemovesALeftoverRollup(t *testing.T) {
	e, store, _ := newUnitEngine()
	store.counterExists = false
	store.rollup, store.version = &Document{Count: 4, UpdatedAt: t0}, t0
	out, err := e.Refresh(context.Background(), "c", t0.Add(time.Second), SourceTrigger)
	if err != nil || out != Covered || store.removed != 1 || store.rollup != nil || len(store.written) != 0 {
		t.Errorf("refresh of a deleted counter: %v, %v, removed %d, roll-up %+v, %d writes; want the roll-up removed, nothing written",
			out, err, store.removed, store.rollup, len(store.written))
	}
}

func TestUnitRefreshRestoresACounterWhoseShardsOutlivedItsDelete(t *testing.T) {
	e, store, _ := newUnitEngine()
	store.counterExists = false
	store.totalsResult = counter.Totals{Count: 2, Writes: 2, Shards: 1}
	out, err := e.Refresh(context.Background(), "c", t0, SourceTrigger)
	if err != nil || out != Wrote || store.restored != 1 || store.written[0].count != 2 {
		t.Errorf("refresh of shards without a counter: %v, %v, restored %d, written %+v; want the counter restored and rolled up",
			out, err, store.restored, store.written)
	}
}

func TestUnitRefreshGrowsAHotCounter(t *testing.T) {
	e, store, clk := newUnitEngine()
	store.rollup, store.version = &Document{UpdatedAt: t0, ShardWrites: 100}, t0
	store.totalsResult = counter.Totals{Writes: 180} // 80 shard writes in the second since
	clk.now = t0.Add(time.Second)
	// The sweep's refresh computes at once (a trigger's would settle first), so the rate is over 1 s.
	if _, err := e.Refresh(context.Background(), "c", t0.Add(500*time.Millisecond), SourceScheduler); err != nil {
		t.Fatal(err)
	}
	if len(store.adapted) != 1 || store.adapted[0] != [2]int{10, 800} || store.written[0].decision.rate != 80 {
		t.Errorf("adapted %v after %+v; want 10 -> 800 shards at 80 writes/s", store.adapted, store.written)
	}
}

func TestUnitRefreshFailureIsReportedAndWritesNothing(t *testing.T) {
	e, store, _ := newUnitEngine()
	store.totalsErr = errors.New("unavailable")
	if _, err := e.Refresh(context.Background(), "c", t0, SourceTrigger); !errors.Is(err, store.totalsErr) || len(store.written) != 0 {
		t.Errorf("refresh with a failing sum: %v, %d writes; want the failure, no write", err, len(store.written))
	}
}

// TestUnitRefreshPrunesHoursWhenDue: a roll-up written while the counter has hourly buckets due
// prunes them as of its computation; a roll-up without them due, or one that is covered, prunes nothing.
func TestUnitRefreshPrunesHoursWhenDue(t *testing.T) {
	e, store, clk := newUnitEngine()
	store.totalsResult = counter.Totals{Count: 5, Writes: 3, Shards: 10}
	clk.now = t0.Add(time.Second)
	// The sweep's refreshes compute at once (a trigger's first would settle), on the fake clock's time.
	if _, err := e.Refresh(context.Background(), "c", t0, SourceScheduler); err != nil || len(store.pruned) != 0 {
		t.Fatalf("refresh without hours due: %v, pruned %v; want none", err, store.pruned)
	}
	store.hoursDue = true
	if _, err := e.Refresh(context.Background(), "c", t0.Add(time.Second), SourceScheduler); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Refresh(context.Background(), "c", t0.Add(time.Second), SourceScheduler); err != nil {
		t.Fatal(err)
	}
	if len(store.pruned) != 1 || !store.pruned[0].Equal(store.written[1].computedAt) {
		t.Errorf("pruned %v after roll-ups %+v; want once, as of the second roll-up", store.pruned, store.written)
	}
}

// TestUnitRefreshFoldsStrayShardsAtTheSameCount: shard documents past num_shards (recreated by an
// instance with a stale cached count) are folded even when the count itself stays, at min_shards.
func TestUnitRefreshFoldsStrayShardsAtTheSameCount(t *testing.T) {
	e, store, clk := newUnitEngine()
	store.totalsResult = counter.Totals{Count: 5, Writes: 3, Shards: 12} // 10 shards + 2 strays
	clk.now = t0.Add(time.Second)
	if _, err := e.Refresh(context.Background(), "c", t0, SourceTrigger); err != nil {
		t.Fatal(err)
	}
	if len(store.adapted) != 1 || store.adapted[0] != [2]int{10, 10} {
		t.Errorf("adapted %v; want one fold at 10 -> 10 shards", store.adapted)
	}
}

func TestUnitRefreshDefersToTheInstanceThatWroteTheLastRollup(t *testing.T) {
	for _, own := range []bool{true, false} {
		e, store, clk := newUnitEngine()
		writer := "another-instance"
		if own {
			writer = e.instance
		}
		store.rollup = &Document{Count: 5, UpdatedAt: t0, Writer: writer}
		store.version = t0
		store.totalsResult = counter.Totals{Count: 6}
		clk.now = t0.Add(200 * time.Millisecond)
		if out, err := e.Refresh(context.Background(), "c", t0.Add(150*time.Millisecond), SourceTrigger); err != nil || out != Wrote {
			t.Fatalf("refresh: %v, %v; want Wrote", out, err)
		}
		from := t0.Add(time.Second) // an interval after the last roll-up
		if !own {
			from = from.Add(time.Second / 2) // the writer goes first
		}
		if len(clk.sleeps) != 1 || clk.sleeps[0].Before(from) || !clk.sleeps[0].Before(from.Add(time.Second/8)) {
			t.Errorf("last roll-up written by this instance %v: slept %v; want one wait until %v plus less than 125ms", own, clk.sleeps, from)
		}
		if store.written[0].writer != e.instance {
			t.Errorf("roll-up written with writer %q, want this instance %q", store.written[0].writer, e.instance)
		}
	}
}
