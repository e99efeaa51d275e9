package counter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardcount/counters/groupcommit"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const testInterval = 100 * time.Millisecond

// addAsync runs add in a goroutine and returns where its result arrives.
func addAsync(ctx context.Context, g *groupCommitter, req batched) <-chan reply {
	out := make(chan reply, 1)
	go func() { out <- g.Add(ctx, req.incs[0].Counter, req) }()
	return out
}

func result(t *testing.T, ch <-chan reply) reply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return reply{}
	}
}

// TestGroupCancelledBeforeItsWriteIsTakenOutAndNeverWritten: a request that gives up while its
// increment waits for the next write is answered "not applied", and that write never holds it.
func TestGroupCancelledBeforeItsWriteIsTakenOutAndNeverWritten(t *testing.T) {
	clk, w := newFakeClock(), newFakeWriter()
	g := newGroupCommitter(testInterval, clk, w.write)

	first := addAsync(context.Background(), g, unkeyed("c", 1))
	inFlight := w.next(t) // a lone increment is written at once
	ctx, cancel := context.WithCancel(context.Background())
	queued := addAsync(ctx, g, unkeyed("c", 2))
	kept := addAsync(context.Background(), g, unkeyed("c", 4))
	eventually(t, "two increments queued", func() bool { return g.Pending("c") == 2 })
	cancel()
	if r := result(t, queued); !errors.Is(r.err, ErrNotApplied) {
		t.Fatalf("cancelled queued increment answered %+v, want ErrNotApplied", r)
	}
	inFlight.answer(nil)
	if r := result(t, first); r.err != nil {
		t.Fatalf("first increment: %v", r.err)
	}
	eventually(t, "the next write waits for its interval", func() bool { return clk.timers() == 1 })
	clk.Advance(testInterval)
	next := w.next(t)
	if len(next.batch) != 1 || next.batch[0].incs[0].Delta != 4 {
		t.Fatalf("next write holds %+v, want only the increment of 4 (the cancelled one taken out)", next.batch)
	}
	next.answer(nil)
	if r := result(t, kept); r.err != nil {
		t.Fatalf("kept increment: %v", r.err)
	}
	eventually(t, "the group's loop waits out its interval", func() bool { return clk.timers() == 1 })
	clk.Advance(testInterval)
	eventually(t, "the group ends", func() bool { return g.Running() == 0 })
	w.none(t)
}

// TestGroupCancelledInFlightLearnsItsWritesOutcome: a request that gives up while its write is in
// flight is answered with that write's outcome, applied or unknown, never a guess.
func TestGroupCancelledInFlightLearnsItsWritesOutcome(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write error
		want  func(reply) bool
	}{
		{"applied", nil, func(r reply) bool { return r.err == nil && r.outcome.Applied[0].Shard == 3 }},
		{"unknown", outcomeUnknown(status.Error(codes.Unavailable, "lost")), func(r reply) bool { return errors.Is(r.err, ErrOutcomeUnknown) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFakeWriter()
			g := newGroupCommitter(testInterval, newFakeClock(), w.write)
			ctx, cancel := context.WithCancel(context.Background())
			out := addAsync(ctx, g, unkeyed("c", 1))
			call := w.next(t)
			cancel()
			// A wrong committer answers as soon as the context ends; give it a moment to show it.
			select {
			case r := <-out:
				t.Fatalf("answered %+v while its write was in flight", r)
			case <-time.After(50 * time.Millisecond):
			}
			call.answer(tc.write)
			if r := result(t, out); !tc.want(r) {
				t.Errorf("answered %+v, want the write's outcome (%v)", r, tc.write)
			}
		})
	}
}

// TestGroupFailedWriteFailsExactlyItsBatch: a write that fails fails the increments it held and no
// others, of its counter or another.
func TestGroupFailedWriteFailsExactlyItsBatch(t *testing.T) {
	clk, w := newFakeClock(), newFakeWriter()
	g := newGroupCommitter(testInterval, clk, w.write)
	a1 := addAsync(context.Background(), g, unkeyed("a", 1))
	callA1 := w.next(t)
	a2 := addAsync(context.Background(), g, unkeyed("a", 2))
	a3 := addAsync(context.Background(), g, unkeyed("a", 3))
	b := addAsync(context.Background(), g, unkeyed("b", 1))
	callB := w.next(t)
	eventually(t, "a2 and a3 queued", func() bool { return g.Pending("a") == 2 })
	callA1.answer(nil)
	callB.answer(notApplied(status.Error(codes.Unavailable, "down")))
	eventually(t, "a's next write waits", func() bool { return clk.timers() >= 1 })
	clk.Advance(testInterval)
	callA2 := w.next(t)
	if len(callA2.batch) != 2 {
		t.Fatalf("second write of a holds %d increments, want 2", len(callA2.batch))
	}
	callA2.answer(notApplied(status.Error(codes.Aborted, "contention")))
	if r := result(t, a1); r.err != nil {
		t.Errorf("a1: %v, want applied", r.err)
	}
	for name, ch := range map[string]<-chan reply{"a2": a2, "a3": a3, "b": b} {
		if r := result(t, ch); !errors.Is(r.err, ErrNotApplied) {
			t.Errorf("%s: %+v, want ErrNotApplied", name, r)
		}
	}
}

// TestCloseWritesPendingGroupsAtOnceAndRefusesNewIncrements: Close does not wait for the interval;
// it returns once every held increment has its outcome, and later increments are refused.
func TestCloseWritesPendingGroupsAtOnceAndRefusesNewIncrements(t *testing.T) {
	clk, w := newFakeClock(), newFakeWriter()
	s := newFakeStore(nil)
	s.groups = newGroupCommitter(time.Hour, clk, w.write)
	incr := func(id string) <-chan error {
		out := make(chan error, 1)
		go func() { _, err := s.Increment(context.Background(), Request{Counter: id, Delta: 1}); out <- err }()
		return out
	}
	first := incr("c")
	inFlight := w.next(t)
	held := []<-chan error{incr("c"), incr("c")}
	eventually(t, "two increments held", func() bool { return s.groups.Pending("c") == 2 })

	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	eventually(t, "Close began", func() bool {
		if s.life.Enter() {
			s.life.Leave()
			return false
		}
		return true
	})
	if _, err := s.Increment(context.Background(), Request{Counter: "c", Delta: 1}); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotApplied) {
		t.Fatalf("increment after Close began: %v, want ErrClosed and ErrNotApplied", err)
	}
	inFlight.answer(nil)
	flushed := w.next(t) // no clock advance: Close does not wait out the hour
	if len(flushed.batch) != 2 {
		t.Fatalf("flushed write holds %d increments, want 2", len(flushed.batch))
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the flushed write had its outcome", err)
	default:
	}
	flushed.answer(nil)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, ch := range append(held, first) {
		if err := <-ch; err != nil {
			t.Errorf("held increment: %v, want applied", err)
		}
	}
}

// TestCloseGivesUpWhenItsContextEnds: Close returns ctx's error while a write is still in flight.
func TestCloseGivesUpWhenItsContextEnds(t *testing.T) {
	w := newFakeWriter()
	s := newFakeStore(nil)
	s.groups = newGroupCommitter(testInterval, newFakeClock(), w.write)
	done := make(chan error, 1)
	go func() { _, err := s.Increment(context.Background(), Request{Counter: "c", Delta: 1}); done <- err }()
	call := w.next(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want context.Canceled", err)
	}
	call.answer(nil)
	if err := <-done; err != nil {
		t.Errorf("increment: %v", err)
	}
}

// TestAmbiguousCommitIsSettledByFencing: a commit that fails ambiguously is settled by fencing its
// write record: a fence that applies proves "not applied"; a fence that finds the commit's record
// proves "applied"; a fence that cannot be written leaves the outcome unknown. Never a guess.
// settleCase is a scripted failure of a commit and the result it must end in.
type settleCase struct {
	name     string
	plans    *fakePlans
	want     func(reply) bool
	commits  int
	wantDesc string
}

var (
	unavailable = status.Error(codes.Unavailable, "connection reset")
	exists      = status.Error(codes.AlreadyExists, "exists")
)

func TestAmbiguousCommitIsSettledByFencing(t *testing.T) {
	for _, tc := range []settleCase{
		{"fence applies: not applied", &fakePlans{commits: []error{unavailable}},
			func(r reply) bool {
				return errors.Is(r.err, ErrNotApplied) && !errors.Is(r.err, ErrOutcomeUnknown)
			}, 1, "ErrNotApplied"},
		{"fence finds the write: applied", &fakePlans{commits: []error{unavailable}, fences: []error{exists}, inspects: []inspection{{write: writeApplied}}},
			func(r reply) bool { return r.err == nil && r.outcome.Applied[0].Shard == 7 }, 1, "applied"},
		{"fence finds its own earlier attempt: not applied", &fakePlans{commits: []error{unavailable}, fences: []error{exists}, inspects: []inspection{{write: writeFenced}}},
			func(r reply) bool { return errors.Is(r.err, ErrNotApplied) }, 1, "ErrNotApplied"},
		{"fence fails: unknown", &fakePlans{commits: []error{unavailable}, fences: []error{unavailable}},
			func(r reply) bool {
				return errors.Is(r.err, ErrOutcomeUnknown) && !errors.Is(r.err, ErrNotApplied)
			}, 1, "ErrOutcomeUnknown"},
		{"library re-sent an applied commit: applied, no fence", &fakePlans{commits: []error{exists}, inspects: []inspection{{write: writeApplied}}},
			func(r reply) bool { return r.err == nil }, 1, "applied"},
		{"contention: fenced, then sent again with a new write ID", &fakePlans{commits: []error{status.Error(codes.Aborted, "contention"), nil}},
			func(r reply) bool { return r.err == nil }, 2, "applied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeStore(tc.plans)
			r := s.commitBatch(context.Background(), []batched{unkeyed("c", 5)})[0]
			if !tc.want(r) {
				t.Errorf("result %+v (%v), want %s", r, r.err, tc.wantDesc)
			}
			if n := len(tc.plans.committed); n != tc.commits {
				t.Errorf("%d commits, want %d", n, tc.commits)
			}
			if n := len(tc.plans.committed); n == 2 && tc.plans.committed[0].writeID == tc.plans.committed[1].writeID {
				t.Error("a commit sent again after a fence reused the fenced write ID")
			}
			if tc.name == "library re-sent an applied commit: applied, no fence" && tc.plans.fenced != 0 {
				t.Errorf("%d fences, want none", tc.plans.fenced)
			}
		})
	}
}

// TestDuplicateKeysInAGroupNeverBlockTheOthers: a batch holding a key applied before, a key twice,
// and an unkeyed increment: the old key is answered with its first application and taken out, the
// repeated key applies once and its repeat is a duplicate, the rest commit together.
func TestDuplicateKeysInAGroupNeverBlockTheOthers(t *testing.T) {
	old := keyed("c", 2, "old")
	first := AppliedIncrement{Counter: "c", Delta: 2, Shard: 1}
	plans := &fakePlans{
		commits: []error{status.Error(codes.AlreadyExists, "a dedupe record exists"), nil},
		inspects: []inspection{{duplicates: map[int]dedupeRecordData{1: {
			Fingerprint: old.fingerprint,
			Applied: []struct {
				Counter string `firestore:"counter"`
				Delta   int64  `firestore:"delta"`
				Shard   int    `firestore:"shard"`
			}{{Counter: first.Counter, Delta: first.Delta, Shard: first.Shard}},
		}}}},
	}
	s := newFakeStore(plans)
	reused := keyed("c", 9, "new") // the key "new" again, with another delta
	batch := []batched{keyed("c", 1, "new"), old, keyed("c", 1, "new"), unkeyed("c", 4), reused}
	replies := s.commitBatch(context.Background(), batch)

	if len(plans.committed) != 2 {
		t.Fatalf("%d commits, want 2 (the second without the old key)", len(plans.committed))
	}
	second := plans.committed[1]
	if len(second.dedupes) != 1 || second.dedupes[0].key.ID != "new" || second.shards[0].delta != 5 {
		t.Errorf("second commit: keys %+v, delta %d; want only key new and 1+4", second.dedupes, second.shards[0].delta)
	}
	if r := replies[0]; r.err != nil || r.outcome.Duplicate || r.outcome.Applied[0].Shard != 7 {
		t.Errorf("new: %+v, want applied on shard 7", r)
	}
	if r := replies[1]; r.err != nil || !r.outcome.Duplicate || r.outcome.Applied[0] != first {
		t.Errorf("old: %+v, want a duplicate answered with %+v", r, first)
	}
	if r := replies[2]; r.err != nil || !r.outcome.Duplicate || r.outcome.Applied[0].Shard != 7 {
		t.Errorf("repeat of new: %+v, want a duplicate of the first", r)
	}
	if r := replies[3]; r.err != nil || r.outcome.Applied[0].Delta != 4 {
		t.Errorf("unkeyed: %+v, want applied", r)
	}
	if r := replies[4]; !errors.Is(r.err, ErrKeyReused) {
		t.Errorf("key new with another delta: %+v, want ErrKeyReused", r)
	}
}

// TestAmbiguousKeyedCommitIsSettledBySendingItAgain: a commit of keyed increments only has no write
// record to fence: it is sent once more (its dedupe records make that safe). Applied, or found applied
// by its write ID on its dedupe records, it is answered applied; failing again, unknown.
func TestAmbiguousKeyedCommitIsSettledBySendingItAgain(t *testing.T) {
	applied := func(r reply) bool { return r.err == nil && !r.outcome.Duplicate }
	for _, tc := range []settleCase{
		{name: "sent again: applied", plans: &fakePlans{commits: []error{unavailable, nil}}, want: applied},
		{name: "sent again, finds its own records: applied", want: applied,
			plans: &fakePlans{commits: []error{unavailable, exists}, inspects: []inspection{{write: writeApplied}}}},
		{name: "sent again, fails again: unknown", plans: &fakePlans{commits: []error{unavailable, unavailable}},
			want: func(r reply) bool {
				return errors.Is(r.err, ErrOutcomeUnknown) && !errors.Is(r.err, ErrNotApplied)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeStore(tc.plans)
			r := s.commitBatch(context.Background(), []batched{keyed("c", 1, "k1"), keyed("c", 2, "k2")})[0]
			if !tc.want(r) {
				t.Errorf("result %+v (%v)", r, r.err)
			}
			if tc.plans.fenced != 0 {
				t.Errorf("%d fences of a commit without a write record", tc.plans.fenced)
			}
			if len(tc.plans.committed) != 2 || tc.plans.committed[0].writeID != tc.plans.committed[1].writeID || tc.plans.committed[0].writeRecord {
				t.Errorf("commits %d, want the same keyed commit (same write ID, no write record) sent twice", len(tc.plans.committed))
			}
		})
	}
}

// TestChangeCommitsAreAnIntervalApartFromTheirEnds: with AfterCommit (the collection counters'
// committer), a write that took long still leaves a whole interval before the next one starts, so
// the counter's ledger document takes one write per interval in commit time too.
func TestChangeCommitsAreAnIntervalApartFromTheirEnds(t *testing.T) {
	clk, w := newFakeClock(), newFakeWriter()
	g := groupcommit.New(groupcommit.Options[batched, reply]{Interval: testInterval, Clock: clk, Commit: w.write,
		Take: batchSize, Timeout: time.Minute, AfterCommit: true})
	first := addAsync(context.Background(), g, unkeyed("c", 1))
	inFlight := w.next(t)
	second := addAsync(context.Background(), g, unkeyed("c", 2))
	eventually(t, "the second change queued", func() bool { return g.Pending("c") == 1 })
	clk.Advance(testInterval * 3 / 4) // the first write is slow
	inFlight.answer(nil)
	if r := result(t, first); r.err != nil {
		t.Fatal(r.err)
	}
	eventually(t, "the next write waits", func() bool { return clk.timers() == 1 })
	clk.Advance(testInterval / 2) // an interval after the first write began, not after it ended
	time.Sleep(50 * time.Millisecond)
	if clk.timers() != 1 {
		t.Fatal("the next write did not wait an interval after the first one ended")
	}
	w.none(t)
	clk.Advance(testInterval / 2)
	w.next(t).answer(nil)
	if r := result(t, second); r.err != nil {
		t.Fatal(r.err)
	}
}
