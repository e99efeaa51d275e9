package counter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shardcount/counters/shared"
)

// maxGroupSize bounds the increments merged into one write. With deltas of at most 2^53 in
// magnitude (shared.ParseConfig's bound on MAX_DELTA), 512 of them cannot overflow an int64.
const maxGroupSize = 512

// maxKeyedPerGroup bounds the keyed entries in one write: each adds a dedupe record to the commit,
// which stays within Firestore's historical 500 writes per commit with the write record, the shard
// and the counter on top.
const maxKeyedPerGroup = 450

// batchWriter writes a batch of entries of one counter in one commit (or a few, when duplicates are
// taken out) and returns each entry's result, in order.
type batchWriter func(ctx context.Context, batch []entry) []entryResult

// groupCommitter merges the concurrent increments of each counter in this instance into one shard
// write, at most one per interval per counter. A write goes out at once when the counter's previous
// one is an interval old, so a lone increment waits for nothing; under load, the increments that
// arrive while the counter waits out its interval share the next write. Each increment is answered
// only when the write holding it has an outcome, and a failed write fails exactly the increments it
// held. An increment whose caller gives up before its write is sent is taken out of its group, so
// "not applied" is true; one whose write is in flight waits for that write's outcome.
type groupCommitter struct {
	interval time.Duration
	clock    shared.Clock
	write    batchWriter

	mu     sync.Mutex
	groups map[string]*counterGroup
	// flushing is closed by flush: every group writes what it holds without waiting.
	flushing  chan struct{}
	flushOnce sync.Once
}

// counterGroup is one counter's queue of increments waiting for their write.
type counterGroup struct {
	pending    []*pendingEntry
	lastCommit time.Time
}

// pendingEntry is one caller's entry and where its result goes.
type pendingEntry struct {
	entry entry
	done  chan entryResult
}

func newGroupCommitter(interval time.Duration, c shared.Clock, write batchWriter) *groupCommitter {
	return &groupCommitter{interval: interval, clock: c, write: write, groups: make(map[string]*counterGroup), flushing: make(chan struct{})}
}

// add queues e for counter id and returns its result once the write holding it has an outcome, or
// "not applied" when ctx ends before its write was sent.
func (g *groupCommitter) add(ctx context.Context, id string, e entry) entryResult {
	p := &pendingEntry{entry: e, done: make(chan entryResult, 1)}
	g.mu.Lock()
	group, running := g.groups[id]
	if !running {
		group = &counterGroup{}
		g.groups[id] = group
	}
	group.pending = append(group.pending, p)
	g.mu.Unlock()
	if !running {
		go g.commitLoop(id, group)
	}
	select {
	case r := <-p.done:
		return r
	case <-ctx.Done():
		if g.takeOut(group, p) {
			return entryResult{err: notApplied(fmt.Errorf("gave up waiting for the group write of counter %q: %w", id, ctx.Err()))}
		}
		// The write holding it is in flight: its outcome comes within the write's own bounds.
		return <-p.done
	}
}

// takeOut removes p from its group if its write has not been sent, and reports whether it did.
func (g *groupCommitter) takeOut(group *counterGroup, p *pendingEntry) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(group.pending, p)
	if i < 0 {
		return false
	}
	group.pending = slices.Delete(group.pending, i, i+1)
	return true
}

// flush makes every group write what it holds now, and every later write go out at once.
func (g *groupCommitter) flush() {
	g.flushOnce.Do(func() { close(g.flushing) })
}

// commitLoop writes counter id's queued increments, one write per interval, until none are left.
func (g *groupCommitter) commitLoop(id string, group *counterGroup) {
	for {
		g.mu.Lock()
		wait := group.lastCommit.Add(g.interval).Sub(g.clock.Now())
		g.mu.Unlock()
		if wait > 0 {
			select {
			case <-g.clock.After(wait):
			case <-g.flushing:
			}
		}

		g.mu.Lock()
		batch := takeBatch(group)
		if len(batch) == 0 {
			// An interval has passed since the last write, so a new loop may write at once.
			delete(g.groups, id)
			g.mu.Unlock()
			return
		}
		group.lastCommit = g.clock.Now()
		g.mu.Unlock()

		entries := make([]entry, len(batch))
		for i, p := range batch {
			entries[i] = p.entry
		}
		// Bounds the reads before the commit (a counter's shard count); the commit and what settles
		// it have bounds of their own (write.go).
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		results := g.write(ctx, entries)
		cancel()
		for i, p := range batch {
			p.done <- results[i]
		}
	}
}

// takeBatch takes the next write's entries off the front of group's queue: at most maxGroupSize,
// and at most maxKeyedPerGroup keyed ones.
func takeBatch(group *counterGroup) []*pendingEntry {
	n, keyed := 0, 0
	for n < len(group.pending) && n < maxGroupSize {
		if group.pending[n].entry.key != nil {
			if keyed == maxKeyedPerGroup {
				break
			}
			keyed++
		}
		n++
	}
	batch := slices.Clone(group.pending[:n])
	group.pending = slices.Delete(group.pending, 0, n)
	return batch
}
