package rollup

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// topPass is one refresh of a list, answered by the test through answer.
type topPass struct {
	asked  time.Time
	answer chan topAnswer
}

type topAnswer struct {
	ranked time.Time
	err    error
}

// topFixture is a list's topRefreshes whose refreshes the test answers, and its callers' results.
type topFixture struct {
	tops   topRefreshes
	passes chan topPass
	done   chan error
}

func newTopFixture() *topFixture {
	return &topFixture{passes: make(chan topPass), done: make(chan error, 10)}
}

// ask starts a caller for a roll-up written ms milliseconds after written.
func (f *topFixture) ask(ctx context.Context, ms int) {
	write := func(ctx context.Context, asked time.Time) (time.Time, error) {
		p := topPass{asked: asked, answer: make(chan topAnswer)}
		f.passes <- p
		a := <-p.answer
		return a.ranked, a.err
	}
	go func() { f.done <- f.tops.wait(ctx, topKey{"posts", "all"}, at(ms), write) }()
}

// returned waits for n callers to return want (nil: success).
func (f *topFixture) returned(t *testing.T, n int, want error) {
	t.Helper()
	for range n {
		if err := <-f.done; !errors.Is(err, want) {
			t.Errorf("a caller returned %v, want %v", err, want)
		}
	}
}

// idle fails t if a refresh started or a caller returned, or a run is left when none should run.
func (f *topFixture) idle(t *testing.T, when string, running bool) {
	t.Helper()
	synctest.Wait()
	select {
	case p := <-f.passes:
		t.Fatalf("%s: a refresh asked for %s started", when, p.asked.Format(time.StampMilli))
	case err := <-f.done:
		t.Fatalf("%s: a caller returned %v", when, err)
	default:
	}
	f.tops.mu.Lock()
	defer f.tops.mu.Unlock()
	if !running && len(f.tops.runs) != 0 {
		t.Errorf("%s: runs left: %v", when, f.tops.runs)
	}
}

var written = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// at is written plus ms milliseconds.
func at(ms int) time.Time { return written.Add(time.Duration(ms) * time.Millisecond) }

// TestTopRefreshRunsAloneThenOnceForRollupsWrittenDuringIt: roll-ups asked while a list's refresh
// runs start none beside it. The refresh serves those written before its read; one follow-up, asked
// for the latest, runs after it for the others; every caller returns once a refresh ranks its
// roll-up.
func TestTopRefreshRunsAloneThenOnceForRollupsWrittenDuringIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTopFixture()
		f.ask(t.Context(), 1)
		first := <-f.passes
		f.ask(t.Context(), 4)
		f.ask(t.Context(), 2)
		f.idle(t, "roll-ups asked during a refresh", true)
		first.answer <- topAnswer{ranked: at(3)} // read after roll-up 2, before roll-up 4
		f.returned(t, 2, nil)
		followUp := <-f.passes
		if !followUp.asked.Equal(at(4)) {
			t.Errorf("follow-up asked for %v, want the latest roll-up's %v", followUp.asked, at(4))
		}
		f.idle(t, "during the follow-up", true)
		followUp.answer <- topAnswer{ranked: at(5)}
		f.returned(t, 1, nil)
		f.idle(t, "after the follow-up ranked every roll-up asked", false)
	})
}

// TestTopRefreshFailureReachesItsCallersAndTheNextRunsAnew: a failed refresh fails every caller
// waiting on it; a later caller starts a new one; a caller that gives up returns its context's error
// while the refresh goes on.
func TestTopRefreshFailureReachesItsCallersAndTheNextRunsAnew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTopFixture()
		f.ask(t.Context(), 1)
		f.ask(t.Context(), 2)
		first := <-f.passes
		f.idle(t, "two roll-ups asked", true)
		failure := errors.New("unavailable")
		first.answer <- topAnswer{err: failure}
		f.returned(t, 2, failure)

		ctx, cancel := context.WithCancel(t.Context())
		f.ask(ctx, 3)
		again := <-f.passes
		cancel()
		f.returned(t, 1, context.Canceled)
		again.answer <- topAnswer{ranked: at(3)}
		f.idle(t, "after the refresh for a caller that gave up", false)
	})
}
