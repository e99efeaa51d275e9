package loadreport

import (
	"testing"
	"time"

	"github.com/shardcount/counters/internal/commitlog"
)

// commitsAt makes one commit of doc at each offset from start.
func commitsAt(start time.Time, doc string, offsets ...time.Duration) []commitlog.Commit {
	cs := make([]commitlog.Commit, len(offsets))
	for i, off := range offsets {
		cs[i] = commitlog.Commit{Time: start.Add(off), Docs: []string{doc}}
	}
	return cs
}

// every returns n offsets spaced by step from first.
func every(first, step time.Duration, n int) []time.Duration {
	offs := make([]time.Duration, n)
	for i := range offs {
		offs[i] = first + time.Duration(i)*step
	}
	return offs
}

func TestWriteRatesOverOneAndTenSecondWindows(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	const steady, burst = "counters/c/shards/0", "counters/c/shards/1"
	var commits []commitlog.Commit
	// steady: 2 writes every second for 30 s. burst: 12 writes in second 5, then nothing.
	commits = append(commits, commitsAt(start, steady, every(100*time.Millisecond, 500*time.Millisecond, 60)...)...)
	commits = append(commits, commitsAt(start, burst, every(5*time.Second, 50*time.Millisecond, 12)...)...)
	// Outside the span: ignored.
	commits = append(commits, commitsAt(start, burst, -time.Millisecond, 30*time.Second)...)
	// One commit writing two documents counts one write for each.
	commits = append(commits, commitlog.Commit{Time: start.Add(20 * time.Second), Docs: []string{"rollups/c", "counters/c/shards/2"}})

	w := NewWriteRates(commits, start, start.Add(30*time.Second))
	if w.Seconds != 30 {
		t.Fatalf("seconds = %d, want 30", w.Seconds)
	}
	if got := w.Hottest(1, nil); got != (DocRate{burst, 12}) {
		t.Errorf("hottest over 1 s = %+v, want the burst's 12 writes/s", got)
	}
	// Over 10 s the burst averages 1.2/s; the steady shard sustains 2/s.
	if got := w.Hottest(10, nil); got != (DocRate{steady, 2}) {
		t.Errorf("hottest over 10 s = %+v, want the steady shard at 2 writes/s", got)
	}
	isRollup := func(d string) bool { return d == "rollups/c" }
	if got := w.Hottest(10, isRollup); got != (DocRate{"rollups/c", 0.1}) {
		t.Errorf("hottest roll-up over 10 s = %+v, want 1 write in 10 s", got)
	}
	each1, each10 := w.HottestEachSecond(1, nil), w.HottestEachSecond(10, nil)
	if each1[4] != 2 || each1[5] != 12 || each1[6] != 2 {
		t.Errorf("hottest each second around the burst = %v, want 2, 12, 2", each1[4:7])
	}
	// The 10 s window ending with second 5 holds seconds 0..5 (6 s so far): 12/6 = 2 for the burst;
	// the one ending with second 14 holds seconds 5..14: 12/10 = 1.2, below the steady shard's 2.
	if each10[5] != 2 || each10[14] != 2 || each10[9] != 2 {
		t.Errorf("hottest over trailing 10 s windows = %v", each10)
	}
	if got := w.HottestEachSecond(10, func(d string) bool { return d == burst }); got[9] != 1.2 || got[14] != 1.2 || got[15] != 0 {
		t.Errorf("the burst over trailing 10 s windows = %v, want 1.2 at seconds 9 and 14, 0 at 15", got)
	}
}

func TestWriteRatesOfARunShorterThanTheWindow(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	const doc = "counters/c/shards/0"
	// 4 s run, 6 writes: a 10 s window is the whole run, 1.5 writes/s.
	w := NewWriteRates(commitsAt(start, doc, every(0, 600*time.Millisecond, 6)...), start, start.Add(3500*time.Millisecond))
	if w.Seconds != 4 {
		t.Fatalf("seconds = %d, want 4 (a partial last second counts)", w.Seconds)
	}
	if got := w.Hottest(10, nil); got != (DocRate{doc, 1.5}) {
		t.Errorf("hottest over 10 s in a 4 s run = %+v, want 1.5", got)
	}
	if got := NewWriteRates(nil, start, start.Add(time.Second)).Hottest(1, nil); got != (DocRate{}) {
		t.Errorf("no commits: hottest = %+v, want nothing", got)
	}
}
