package rollup

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shardcount/counters/shared/carrier"
	"github.com/shardcount/counters/shared/clock"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// Fields of the roll-up document beyond shared's (see Document).
const (
	FieldSource      = "source"
	FieldRevision    = "revision"
	FieldWriter      = "writer"
	FieldShardWrites = "shard_writes"
	FieldWriteRate   = "write_rate"
	FieldCoolSince   = "cool_since"
	FieldLeftGroup   = "left_group"
)

// Values of FieldSource.
const (
	SourceTrigger   = "trigger"
	SourceScheduler = "scheduler"
)

// refreshTimeout bounds one refresh, races lost included.
const refreshTimeout = time.Minute

// Engine keeps roll-ups fresh (see the package doc).
type Engine struct {
	store    backend
	clock    clock.Clock
	interval time.Duration
	policy   ShardPolicy
	sweeper  *firestoreBackend // nil in unit tests
	instance string            // Document.Writer

	mu      sync.Mutex
	pending map[string]*refresh // undecided, per counter
	carry   *carrier.Carrier

	onWrite func(Written)
}

// Written describes a roll-up an Engine wrote.
type Written struct {
	Counter, Source string
	// Age is how long the counter waited: from the later of the replaced roll-up and the first change
	// asked (the sweep: the former) to this roll-up.
	Age time.Duration
}

// OnWrite makes the Engine call f after each roll-up it writes. Call it before using the Engine; f
// must not block.
func (e *Engine) OnWrite(f func(Written)) { e.onWrite = f }

// NewEngine returns an Engine that sums with counters and writes at most once per interval.
func NewEngine(client *firestore.Client, schema shared.Schema, counters *counter.Store, interval time.Duration) *Engine {
	fs := &firestoreBackend{client: client, schema: schema, reader: counters.Reader, lifecycle: counters.Lifecycle, pruner: counters.Pruner, interval: interval}
	e := newEngine(fs, clock.System{}, interval)
	e.sweeper = fs
	return e
}

func newEngine(store backend, clk clock.Clock, interval time.Duration) *Engine {
	return &Engine{store: store, clock: clk, interval: interval, policy: DefaultShardPolicy, instance: crand.Text()[:10],
		pending: make(map[string]*refresh), carry: &carrier.Carrier{Clock: clk}}
}

// Outcome says what a refresh did.
type Outcome int

// Covered: a roll-up computed after the change existed; Wrote: this refresh wrote one.
const (
	Covered Outcome = iota
	Wrote
)

// refresh is one read-compute-write run, shared by callers until it decides.
type refresh struct {
	// Guarded by Engine.mu. Once decided, changes need a new refresh; progress closes when covered
	// (the newest roll-up seen) advances.
	changedAt   time.Time
	decided     bool
	joined      time.Time // local clock
	covered     time.Time
	progress    chan struct{}
	firstChange time.Time

	done    chan struct{}
	outcome Outcome
	err     error
}

// Refresh returns once counter id's roll-up holds every change before changedAt (Firestore's
// clock): Covered, or Wrote. Concurrent callers share one refresh.
func (e *Engine) Refresh(ctx context.Context, id string, changedAt time.Time, source string) (Outcome, error) {
	e.mu.Lock()
	r := e.pending[id]
	if r == nil || r.decided {
		var previous <-chan struct{} // still running: read after it
		if r != nil {
			previous = r.done
		}
		r = &refresh{changedAt: changedAt, firstChange: changedAt, progress: make(chan struct{}), done: make(chan struct{})}
		e.pending[id] = r
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

// seen records that r saw roll-up d, releasing the callers it covers.
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

// run performs r after previous: read, wait for the interval, write if unchanged since read.
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
		<-previous
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
				r.outcome = Covered // deleted
				return
			}
			continue
		}
		if e.decide(r, func(changedAt time.Time) bool { return covers(v.rollup, changedAt) }) {
			r.outcome = Covered
			return
		}
		// After a quiet spell, a trigger settles so one computation covers the burst.
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
			if err := clock.SleepUntil(ctx, e.clock, e.clock.Now().Add(wait)); err != nil {
				r.err = fmt.Errorf("roll up counter %q: %w", id, err)
				return
			}
			continue
		}
		// Compute only from a read taken after every caller's change was asked.
		if !e.decide(r, func(changedAt time.Time) bool { return changedAt.Before(v.readAt) || !changedAt.After(asked) }) {
			continue
		}
		err = e.write(ctx, id, v, source, e.firstChange(r))
		if errors.Is(err, errConflict) {
			continue
		}
		r.outcome, r.err = Wrote, err
		return
	}
}

// counterMissing handles a missing counter document: without shards, it removes the roll-up (gone);
// else it restores the document.
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

// decide settles r if final holds for its latest change; new callers then start another refresh.
func (e *Engine) decide(r *refresh, final func(changedAt time.Time) bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r.decided = final(r.changedAt)
	return r.decided
}

func (e *Engine) latestChange(r *refresh) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return r.changedAt
}

func (e *Engine) firstChange(r *refresh) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return r.firstChange
}

// write computes the roll-up at v.readAt, writes it unless changed since v (errConflict), then
// adapts shards and prunes due hourly buckets.
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

// untilNextWrite is how long until nextWriteAt(v), less the local time since readLocally.
func (e *Engine) untilNextWrite(v view, readLocally time.Time) time.Duration {
	if v.rollup == nil {
		return 0
	}
	return e.nextWriteAt(v).Sub(v.readAt) - e.clock.Now().Sub(readLocally)
}

// deferral lets v's writer go first (others wait half an interval), plus up to an eighth of jitter.
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

// settle waits until no change joined r for a quarter interval (an interval at most), then a quarter
// more unless this instance wrote v, plus up to an eighth of jitter.
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
		if err := clock.SleepUntil(ctx, e.clock, until); err != nil {
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
	return clock.SleepUntil(ctx, e.clock, e.clock.Now().Add(d))
}

// nextWriteAt is an interval after the later of v's roll-up computation and commit.
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

// decodeRollup decodes a roll-up snapshot; nil when there is none.
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

// rollupAge is Written.Age.
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

// covers reports whether d was computed after changedAt.
func covers(d *Document, changedAt time.Time) bool {
	return d != nil && d.UpdatedAt.After(changedAt)
}
