package rollup

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// Fields of the roll-up document beyond Document's: they make the throttle work across instances and
// tell readers where a value came from.
const (
	// FieldSource says what wrote the roll-up: SourceTrigger or SourceScheduler.
	FieldSource = "source"
	// FieldRevision counts the writes of the roll-up document: readers see how often it changes.
	FieldRevision = "revision"
	// FieldWriter names the instance that wrote the roll-up: it computes the next one first.
	FieldWriter = "writer"
	// FieldShardWrites, FieldWriteRate and FieldCoolSince carry the write-rate measurement from one
	// roll-up to the next (see ShardPolicy).
	FieldShardWrites = "shard_writes"
	FieldWriteRate   = "write_rate"
	FieldCoolSince   = "cool_since"
	// FieldLeftGroup is the group a counter last left (Document.LeftGroup).
	FieldLeftGroup = "left_group"
)

// Values of FieldSource.
const (
	SourceTrigger   = "trigger"
	SourceScheduler = "scheduler"
)

// refreshTimeout bounds one refresh: it reads, waits for the next interval and loses races to other
// instances' writes as often as it must within it.
const refreshTimeout = time.Minute

// Engine keeps roll-up documents fresh: the exact sum, recomputed (never adjusted by deltas), written
// at most once per interval per counter across every instance, and never overwritten by an older
// computation.
type Engine struct {
	store    backend
	clock    shared.Clock
	interval time.Duration
	policy   ShardPolicy
	// sweeper is the Firestore the scheduled sweep queries; nil in unit tests of the engine.
	sweeper *firestoreBackend

	// instance names this Engine in the roll-ups it writes (Document.Writer).
	instance string

	mu      sync.Mutex
	pending map[string]*refresh // per counter: the refresh that has not yet begun computing
	carry   *shared.Carrier     // Notify's refreshes and the event that waits for them

	// onWrite, if set, is told of every roll-up written (OnWrite).
	onWrite func(Written)
}

// Written describes a roll-up an Engine wrote.
type Written struct {
	// Counter is the counter's ID; Source what wrote it (SourceTrigger or SourceScheduler).
	Counter, Source string
	// Age is how long the roll-up trailed the counter before this one replaced it: from the later of
	// the replaced roll-up's computation and the first change this refresh was asked to cover, to
	// this roll-up's computation, both on Firestore's clock. The sweep does not know when a counter
	// changed, so for its roll-ups Age counts from the replaced roll-up's computation: an upper bound.
	// 0 for a counter's first roll-up written by the sweep.
	Age time.Duration
}

// OnWrite makes the Engine call f after each roll-up it writes (the functions log it for the
// roll-up age metric). Call it before the Engine is used; f must not block.
func (e *Engine) OnWrite(f func(Written)) { e.onWrite = f }

// NewEngine returns an Engine that sums with counters and writes at most once per interval.
func NewEngine(client *firestore.Client, schema shared.Schema, counters *counter.Store, interval time.Duration) *Engine {
	fs := &firestoreBackend{client: client, schema: schema, counters: counters, interval: interval}
	e := newEngine(fs, shared.SystemClock{}, interval)
	e.sweeper = fs
	return e
}

// newEngine returns an Engine over any backend and clock.
func newEngine(store backend, clk shared.Clock, interval time.Duration) *Engine {
	return &Engine{store: store, clock: clk, interval: interval, policy: DefaultShardPolicy, instance: crand.Text()[:10],
		pending: make(map[string]*refresh), carry: &shared.Carrier{Clock: clk}}
}

// Outcome says what a refresh did.
type Outcome int

const (
	// Covered: a roll-up computed after the change already existed.
	Covered Outcome = iota
	// Wrote: this refresh computed and wrote the roll-up.
	Wrote
)

// refresh is one read-compute-write run for a counter, shared by every caller in this instance that
// saw a change before it began computing.
type refresh struct {
	// Guarded by Engine.mu: the latest change a caller of this refresh saw, and whether the refresh
	// has decided (to compute, or that a stored roll-up covers changedAt), after which later changes
	// need a new refresh.
	changedAt time.Time
	decided   bool
	// Guarded by Engine.mu: when the latest caller joined, on this instance's clock.
	joined time.Time
	// Guarded by Engine.mu: the computation time of the newest roll-up the refresh has seen, and a
	// channel closed when that advances, so that a caller whose change it covers returns at once.
	covered  time.Time
	progress chan struct{}
	// Guarded by Engine.mu: the earliest change a caller of this refresh saw.
	firstChange time.Time

	done    chan struct{}
	outcome Outcome
	err     error
}

// Refresh makes sure the roll-up of counter id reflects every change before changedAt, a time on
// Firestore's clock (a shard's update time, a read time), and returns once it does: Covered when a
// roll-up computed after changedAt exists, Wrote when it wrote one. It waits until an interval after
// the previous roll-up when that is younger. Concurrent callers in one Engine share one refresh,
// bounded by time (refreshTimeout), not by the races it loses.
func (e *Engine) Refresh(ctx context.Context, id string, changedAt time.Time, source string) (Outcome, error) {
	e.mu.Lock()
	r := e.pending[id]
	if r == nil || r.decided {
		var previous <-chan struct{} // a decided refresh still computing or writing: read after it
		if r != nil {
			previous = r.done
		}
		r = &refresh{changedAt: changedAt, firstChange: changedAt, progress: make(chan struct{}), done: make(chan struct{})}
		e.pending[id] = r
		// The run outlives any one caller's cancellation: others may be waiting on it.
		go e.run(context.WithoutCancel(ctx), id, source, r, previous)
	} else if changedAt.After(r.changedAt) {
		r.changedAt = changedAt
	} else if changedAt.Before(r.firstChange) {
		r.firstChange = changedAt
	}
	r.joined = e.clock.Now()
	for {
		if r.covered.After(changedAt) {
			e.mu.Unlock()
			return Covered, nil
		}
		progress := r.progress
		e.mu.Unlock()
		select {
		case <-r.done:
			return r.outcome, r.err
		case <-progress:
			e.mu.Lock()
		case <-ctx.Done():
			return 0, fmt.Errorf("roll up counter %q: %w", id, ctx.Err())
		}
	}
}

// seen records that refresh r saw a roll-up computed at computedAt, releasing the callers it covers.
func (e *Engine) seen(r *refresh, d *Document) {
	if d == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if d.UpdatedAt.After(r.covered) {
		r.covered = d.UpdatedAt
		close(r.progress)
		r.progress = make(chan struct{})
	}
}

// run performs refresh r once previous (nil, or a refresh of the same counter that had decided) is
// done: read the roll-up, return if it already covers r's changes, wait for the next window if this
// window's roll-up is written, else compute and write it conditionally on the roll-up being
// unchanged since it was read.
func (e *Engine) run(ctx context.Context, id, source string, r *refresh, previous <-chan struct{}) {
	defer func() {
		e.mu.Lock()
		if e.pending[id] == r {
			delete(e.pending, id)
		}
		e.mu.Unlock()
		close(r.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	if previous != nil {
		<-previous // bounded by its own refreshTimeout
	}
	for first := true; ; first = false {
		asked := e.latestChange(r)
		v, err := e.store.read(ctx, id)
		if err != nil {
			r.err = err
			return
		}
		readLocally := e.clock.Now()
		e.seen(r, v.rollup)
		if !v.counterExists {
			gone, err := e.counterMissing(ctx, id, v)
			if err != nil {
				r.err = err
				return
			}
			if gone && e.decide(r, func(time.Time) bool { return true }) {
				r.outcome = Covered // deleted: nothing to roll up
				return
			}
			continue
		}
		if e.decide(r, func(changedAt time.Time) bool { return covers(v.rollup, changedAt) }) {
			r.outcome = Covered
			return
		}
		// A roll-up written less than an interval ago (on Firestore's clock, as of the read and the
		// time elapsed since) makes ours wait an interval after it. An older one on a trigger's
		// refresh's first read means the counter was quiet and this change starts a burst: settle,
		// so that one computation covers the burst rather than its first write.
		wait := e.untilNextWrite(v, readLocally)
		if wait <= 0 && first && source == SourceTrigger {
			if err := e.settle(ctx, r, v); err != nil {
				r.err = fmt.Errorf("roll up counter %q: %w", id, err)
				return
			}
			continue
		}
		if wait > 0 {
			wait += e.deferral(v)
			if err := shared.SleepUntil(ctx, e.clock, e.clock.Now().Add(wait)); err != nil {
				r.err = fmt.Errorf("roll up counter %q: %w", id, err)
				return
			}
			continue
		}
		// Compute from this read only if it holds every change of r's callers. A caller that joined
		// during or after the read may bring a later change: read again. A change asked before the
		// read and still later than it is not a shard's update time (it stands in on an instance's
		// clock, see Refresh), and no read could settle it.
		if !e.decide(r, func(changedAt time.Time) bool { return changedAt.Before(v.readAt) || !changedAt.After(asked) }) {
			continue
		}
		err = e.write(ctx, id, v, source, e.firstChange(r))
		if errors.Is(err, errConflict) {
			// Another instance wrote a newer roll-up since we read it, or the counter was deleted:
			// see whether what is there now covers us.
			continue
		}
		r.outcome, r.err = Wrote, err
		return
	}
}

// counterMissing handles a refresh of a counter without a counter document: with no shard either,
// it removes any roll-up and reports gone; with shards, it restores the counter document.
func (e *Engine) counterMissing(ctx context.Context, id string, v view) (gone bool, _ error) {
	sums, err := e.store.sums(ctx, id, v.readAt, nil)
	if err != nil {
		return false, err
	}
	if sums.Shards > 0 {
		return false, e.store.restore(ctx, id)
	}
	if v.rollup != nil {
		if err := e.store.removeRollup(ctx, id, v); err != nil {
			return false, err
		}
	}
	return true, nil
}

// decide settles refresh r if final holds for the latest change its callers saw; from then on, new
// callers start a refresh of their own.
func (e *Engine) decide(r *refresh, final func(changedAt time.Time) bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r.decided = final(r.changedAt)
	return r.decided
}

// latestChange is the latest change r's callers saw so far.
func (e *Engine) latestChange(r *refresh) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return r.changedAt
}

// firstChange is the earliest change r's callers saw.
func (e *Engine) firstChange(r *refresh) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return r.firstChange
}

// write computes the roll-up from the read v at its read time: the exact sum, the shard writes and
// the windows' buckets as the shards were then, so that its count is the counter's value at its
// updated_at (v.readAt). It writes the roll-up on condition that it is still as read in v
// (errConflict when not), tells the OnWrite observer, then adapts the shard count if the policy says
// so, and prunes old hourly buckets when they are due. firstChange is the earliest change the
// roll-up was asked to cover (see Written.Age).
func (e *Engine) write(ctx context.Context, id string, v view, source string, firstChange time.Time) error {
	computedAt := v.readAt
	sums, err := e.store.sums(ctx, id, computedAt, v.windows)
	if err != nil {
		return err
	}
	d := e.policy.decide(v.shape, v.rollup, sums.Writes, computedAt)
	w := rollupWrite{count: sums.Count, shardWrites: sums.Writes, windows: sums.Windows, computedAt: computedAt, source: source, writer: e.instance, decision: d}
	if err := e.store.write(ctx, id, v, w); err != nil {
		return err
	}
	if e.onWrite != nil {
		e.onWrite(Written{Counter: id, Source: source, Age: rollupAge(v.rollup, source, firstChange, computedAt)})
	}
	if d.reshapes(v.shape, sums.Totals) {
		if err := e.store.adapt(ctx, id, v.shape.NumShards, d.numShards); err != nil {
			return err
		}
	}
	if v.hoursDue {
		return e.store.pruneHours(ctx, id, computedAt)
	}
	return nil
}

// untilNextWrite is how long after now the roll-up after the one in v may be computed: the time
// from v's read to nextWriteAt on Firestore's clock, less what has passed since on this instance's
// (read locally at readLocally). 0 when there is no roll-up yet.
func (e *Engine) untilNextWrite(v view, readLocally time.Time) time.Duration {
	if v.rollup == nil {
		return 0
	}
	return e.nextWriteAt(v).Sub(v.readAt) - e.clock.Now().Sub(readLocally)
}

// deferral is how much later than the next interval this instance computes the roll-up after the
// one in v: the instance that wrote v goes first and the others half an interval later, so that its
// roll-up usually covers their changes; and instances wake up to an eighth of an interval apart.
func (e *Engine) deferral(v view) time.Duration {
	var d time.Duration
	if v.rollup != nil && v.rollup.Writer != "" && v.rollup.Writer != e.instance {
		d = e.interval / 2
	}
	if spread := e.interval / 8; spread > 0 {
		d += rand.N(spread)
	}
	return d
}

// settle waits before the first roll-up after a change to a quiet counter (one whose roll-up in v is
// older than an interval), so that one computation covers a burst: until no change has joined
// refresh r for a quarter of an interval, or an interval has passed; then, for an instance other
// than the one that wrote v, a quarter of an interval more, so that the writer's roll-up usually
// covers its changes; and up to an eighth of an interval more, so that instances wake apart.
func (e *Engine) settle(ctx context.Context, r *refresh, v view) error {
	quiet, latest := e.interval/4, e.clock.Now().Add(e.interval)
	for {
		e.mu.Lock()
		until := r.joined.Add(quiet)
		e.mu.Unlock()
		if until.After(latest) {
			until = latest
		}
		if !e.clock.Now().Before(until) {
			break
		}
		if err := shared.SleepUntil(ctx, e.clock, until); err != nil {
			return err
		}
	}
	var d time.Duration
	if v.rollup != nil && v.rollup.Writer != "" && v.rollup.Writer != e.instance {
		d = e.interval / 4
	}
	if spread := e.interval / 8; spread > 0 {
		d += rand.N(spread)
	}
	return shared.SleepUntil(ctx, e.clock, e.clock.Now().Add(d))
}

// nextWriteAt is the earliest time the roll-up after the one in v may be computed: one interval after
// the later of its computation and its commit.
func (e *Engine) nextWriteAt(v view) time.Time {
	if v.rollup == nil {
		return time.Time{}
	}
	last := v.rollup.UpdatedAt
	if v.version.After(last) {
		last = v.version
	}
	return last.Add(e.interval)
}

// decodeRollup reads a roll-up snapshot; nil means there is no roll-up yet.
func decodeRollup(snap *firestore.DocumentSnapshot) (*Document, error) {
	if snap == nil || !snap.Exists() {
		return nil, nil
	}
	var d Document
	if err := snap.DataTo(&d); err != nil {
		return nil, fmt.Errorf("decode roll-up %s: %w", snap.Ref.ID, err)
	}
	return &d, nil
}

// rollupAge is Written.Age of a roll-up computed at computedAt that replaces previous (nil: none).
func rollupAge(previous *Document, source string, firstChange, computedAt time.Time) time.Duration {
	since := firstChange
	if source == SourceScheduler {
		since = time.Time{}
	}
	if previous != nil && previous.UpdatedAt.After(since) {
		since = previous.UpdatedAt
	}
	if since.IsZero() || computedAt.Before(since) {
		return 0
	}
	return computedAt.Sub(since)
}

// covers reports whether roll-up d was computed after a change seen at changedAt.
func covers(d *Document, changedAt time.Time) bool {
	return d != nil && d.UpdatedAt.After(changedAt)
}
