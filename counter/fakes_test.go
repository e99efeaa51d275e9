package counter

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/shared/clock"
	"github.com/shardcount/counters/shared/wire"
)

// Fakes for the fast unit tests of the write path: a clock the test moves, a commit function the test
// answers, a plan store that fails as the test says. None of these tests needs the emulator, and none
// waits a fixed time to be right: each waits for a state it can observe.

// fakeClock is a clock that moves only when the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

func (c *fakeClock) timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// eventually waits until cond holds, yielding meanwhile; it fails the test if cond never holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // a bound on a hang, not a timing assumption
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// writeCall is one batch the committer asked the fake writer to write; the test answers it.
type writeCall struct {
	batch   []batched
	replies chan []reply
}

// fakeWriter hands every batch to the test and returns the test's answer.
type fakeWriter struct{ calls chan writeCall }

func newFakeWriter() *fakeWriter { return &fakeWriter{calls: make(chan writeCall, 16)} }

func (f *fakeWriter) write(_ context.Context, batch []batched) []reply {
	c := writeCall{batch: batch, replies: make(chan []reply, 1)}
	f.calls <- c
	return <-c.replies
}

// next is the next batch the committer writes.
func (f *fakeWriter) next(t *testing.T) writeCall {
	t.Helper()
	select {
	case c := <-f.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no write came")
		return writeCall{}
	}
}

// none fails the test if a write is waiting.
func (f *fakeWriter) none(t *testing.T) {
	t.Helper()
	select {
	case c := <-f.calls:
		t.Fatalf("unexpected write of %d requests", len(c.batch))
	default:
	}
}

// answer answers a batch as applied on shard 3, or with err for every request.
func (c writeCall) answer(err error) {
	replies := make([]reply, len(c.batch))
	for i, req := range c.batch {
		if err != nil {
			replies[i] = reply{err: err}
			continue
		}
		replies[i] = reply{outcome: Result{Applied: []AppliedIncrement{{Counter: req.incs[0].Counter, Delta: req.incs[0].Delta, Shard: 3}}}}
	}
	c.replies <- replies
}

func unkeyed(id string, delta int64) batched {
	return batched{incs: []wire.Increment{{Counter: id, Delta: delta}}}
}

func keyed(id string, delta int64, key string) batched {
	req := unkeyed(id, delta)
	req.key = &Key{Source: SourcePubSub, ID: key}
	req.fingerprint, _ = fingerprintOf(req.incs)
	return req
}

// fakePlans is a plan store whose answers the test scripts, one per call.
type fakePlans struct {
	mu        sync.Mutex
	commits   []error
	fences    []error
	inspects  []inspection
	committed []*commitPlan
	fenced    int
}

func pop[T any](q *[]T) T {
	var zero T
	if len(*q) == 0 {
		return zero
	}
	v := (*q)[0]
	*q = (*q)[1:]
	return v
}

func (f *fakePlans) commit(_ context.Context, plan *commitPlan) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.committed = append(f.committed, plan)
	return pop(&f.commits)
}

func (f *fakePlans) inspect(context.Context, *commitPlan) (inspection, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return pop(&f.inspects), nil
}

func (f *fakePlans) fence(context.Context, *commitPlan) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fenced++
	return pop(&f.fences)
}

// newFakeStore is Increments over fake plans, whose counter "c" is known to have 10 shards.
func newFakeStore(plans planStore) *Increments {
	sh := &shards{
		documents: documents{defaultNumShards: 10},
		configs:   newConfigCache(time.Hour, clock.System{}),
		pickShard: func(string, int) int { return 7 },
		clock:     clock.System{},
		touches:   newTouchStamps(clock.System{}),
	}
	s := newIncrements(sh, plans, 0, &fences{sh: sh})
	s.configs.put("c", writeConfig{numShards: 10})
	return s
}
