package rollup

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/shared/clock"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
)

// These tests hold the roll-up to its contract on the Firestore emulator: its count is the counter's
// exact value at its updated_at, and a refresh that answers a caller wrote or found a roll-up
// computed after the caller's change. Another instance's shard write is placed where the engine's
// round trips leave room for it, by a hook around the real backend (racingBackend).

// racingBackend is the Firestore backend with hooks run once: afterRead after a read of the roll-up
// returns, beforeSums before the sums of a roll-up are computed.
type racingBackend struct {
	*firestoreBackend
	afterRead, beforeSums func()
	onceRead, onceSums    sync.Once
}

func (b *racingBackend) read(ctx context.Context, id string) (view, error) {
	v, err := b.firestoreBackend.read(ctx, id)
	if err == nil && b.afterRead != nil {
		b.onceRead.Do(b.afterRead)
	}
	return v, err
}

func (b *racingBackend) sums(ctx context.Context, id string, at time.Time, windows []string) (counter.Sums, error) {
	if b.beforeSums != nil {
		b.onceSums.Do(b.beforeSums)
	}
	return b.firestoreBackend.sums(ctx, id, at, windows)
}

// raceFixture is a counter with a month window holding 10 (two increments of 5), an Engine over a
// racingBackend, and another instance's Store to race it with.
type raceFixture struct {
	id      string
	engine  *Engine
	backend *racingBackend
	other   *counter.Store
	// month is the month bucket of the increments, on this machine's clock.
	month string
}

func newRaceFixture(t *testing.T) *raceFixture {
	t.Helper()
	ctx := context.Background()
	client := testenv.Firestore(t)
	schema := config.Default().Schema()
	opts := counter.Options{DefaultNumShards: 4, ShardCountCacheTTL: time.Minute}
	counters := counter.NewStore(client, schema, opts)
	f := &raceFixture{id: testenv.UniqueID("raced"), other: counter.NewStore(client, schema, opts), month: counter.Bucket("month", time.Now())}
	if _, err := counters.Lifecycle.Configure(ctx, f.id, counter.Settings{NumShards: 4, Windows: []string{"month"}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := counters.Increments.Increment(ctx, counter.Request{Counter: f.id, Delta: 5}); err != nil {
			t.Fatal(err)
		}
	}
	f.backend = &racingBackend{firestoreBackend: &firestoreBackend{client: client, schema: schema, reader: counters.Reader, lifecycle: counters.Lifecycle, pruner: counters.Pruner, interval: 200 * time.Millisecond}}
	f.engine = newEngine(f.backend, clock.System{}, 200*time.Millisecond)
	return f
}

// incrementOnOther commits +100 through the other instance and returns the shard write's commit time.
func (f *raceFixture) incrementOnOther(t *testing.T) time.Time {
	ctx := context.Background()
	res, err := f.other.Increments.Increment(ctx, counter.Request{Counter: f.id, Delta: 100})
	if err != nil {
		t.Errorf("the other instance's increment: %v", err)
		return time.Time{}
	}
	snap, err := f.backend.schema.ShardRef(f.backend.client, f.id, res.Applied[0].Shard).Get(ctx)
	if err != nil {
		t.Errorf("read the other instance's shard: %v", err)
		return time.Time{}
	}
	return snap.UpdateTime
}

// rollup reads the roll-up and checks that its month window agrees with its count.
func (f *raceFixture) rollup(t *testing.T) *Document {
	t.Helper()
	d, err := NewStore(f.backend.client, f.backend.schema).Get(context.Background(), f.id)
	if err != nil || d == nil {
		t.Fatalf("roll-up: %+v, %v", d, err)
	}
	if w := d.Windows["month"]; w.Bucket == f.month && w.Count != d.Count {
		t.Errorf("roll-up count %d but its month bucket %s holds %d: the window was summed at another time than the count", d.Count, w.Bucket, w.Count)
	}
	return d
}

// TestRollupCountIsTheValueAtItsUpdatedAt: another instance commits +100 after the engine's read of
// the roll-up (whose read time becomes updated_at) and before the engine sums the shards. The
// roll-up's count is the value at its updated_at: 10 when the write came after it, 110 when not. A
// reader that counts the writes after updated_at on top of the roll-up (the web client's liveCount)
// then counts every increment once. The write's own refresh then rolls it up.
func TestRollupCountIsTheValueAtItsUpdatedAt(t *testing.T) {
	f := newRaceFixture(t)
	var written time.Time
	f.backend.beforeSums = func() { written = f.incrementOnOther(t) }
	if outcome, err := f.engine.Refresh(context.Background(), f.id, time.Now(), SourceScheduler); err != nil || outcome != Wrote {
		t.Fatalf("refresh: %v, %v; want Wrote", outcome, err)
	}
	d := f.rollup(t)
	want, when := int64(110), "at or before"
	if written.After(d.UpdatedAt) {
		want, when = 10, "after"
	}
	if d.Count != want {
		t.Fatalf("roll-up count %d, updated_at %s; the other instance's +100 was committed at %s, %s it, so the value at updated_at is %d: "+
			"the roll-up's sum was not taken at its updated_at",
			d.Count, d.UpdatedAt.Format(time.RFC3339Nano), written.Format(time.RFC3339Nano), when, want)
	}
	if outcome, err := f.engine.Refresh(context.Background(), f.id, written, SourceTrigger); err != nil {
		t.Fatalf("refresh for the other instance's write: %v, %v", outcome, err)
	}
	if d := f.rollup(t); d.Count != 110 || !d.UpdatedAt.After(written) {
		t.Errorf("after the refresh for the write at %s: roll-up count %d, updated_at %s; want 110, computed after the write",
			written.Format(time.RFC3339Nano), d.Count, d.UpdatedAt.Format(time.RFC3339Nano))
	}
}

// TestRefreshJoinedAfterItsReadReturnsACoveringRollup: another instance commits +100 after the
// engine's read of the roll-up, and that write's event joins the refresh before it computes. When
// the refresh answers that caller, the roll-up was computed after the write (updated_at later than
// it) and counts it: no later roll-up is owed to it.
func TestRefreshJoinedAfterItsReadReturnsACoveringRollup(t *testing.T) {
	f := newRaceFixture(t)
	var (
		written time.Time
		joined  = make(chan error, 1)
	)
	f.backend.afterRead = func() {
		written = f.incrementOnOther(t)
		go func() {
			_, err := f.engine.Refresh(context.Background(), f.id, written, SourceTrigger)
			joined <- err
		}()
		// Return once the write's refresh has joined the one that read.
		for {
			f.engine.mu.Lock()
			r := f.engine.pending[f.id]
			in := r != nil && r.changedAt.Equal(written)
			f.engine.mu.Unlock()
			if in {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := f.engine.Refresh(context.Background(), f.id, time.Now(), SourceScheduler); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if err := <-joined; err != nil {
		t.Fatalf("the joined refresh: %v", err)
	}
	if d := f.rollup(t); !d.UpdatedAt.After(written) || d.Count != 110 {
		t.Errorf("the refresh of the write at %s returned with the roll-up at count %d, updated_at %s: want 110, computed after the write",
			written.Format(time.RFC3339Nano), d.Count, d.UpdatedAt.Format(time.RFC3339Nano))
	}
}
