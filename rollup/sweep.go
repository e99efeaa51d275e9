package rollup

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/shardcount/counters/shared"
)

// sweepConcurrency bounds the refreshes one sweep runs at once.
const sweepConcurrency = 16

// SweepResult says what a sweep read and wrote.
type SweepResult struct {
	// ShardsRead is how many shard documents the sweep's query returned: its read cost.
	ShardsRead int
	// Counters is how many counters those shards belong to.
	Counters int
	// Stale is how many of them had a write newer than their roll-up.
	Stale int
	// Written is how many roll-ups the sweep wrote; the others it found covered meanwhile.
	Written int
}

// Sweep is the safety net for lost or disabled triggers: it rolls up every counter written in the last
// lookback whose roll-up is older than its latest shard write. It finds them with one collection-group
// query on the shards' touched minute, so it reads only the shards of recently active counters (plus
// one roll-up document each), however many idle counters exist.
func (e *Engine) Sweep(ctx context.Context, lookback time.Duration) (SweepResult, error) {
	var res SweepResult
	latest, err := e.recentlyWritten(ctx, shared.UnixMinute(e.now().Add(-lookback)), &res)
	if err != nil {
		return res, err
	}
	res.Counters = len(latest)
	ids := make([]string, 0, len(latest))
	refs := make([]*firestore.DocumentRef, 0, len(latest))
	for id := range latest {
		ids = append(ids, id)
		refs = append(refs, e.schema.RollupRef(e.client, id))
	}
	snaps, err := e.client.GetAll(ctx, refs)
	if err != nil {
		return res, fmt.Errorf("read roll-ups of %d recently written counters: %w", len(refs), err)
	}

	var (
		mu    sync.Mutex
		errs  []error
		wg    sync.WaitGroup
		slots = make(chan struct{}, sweepConcurrency)
	)
	for i, snap := range snaps {
		current, err := decodeRollup(snap)
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			continue
		}
		id, changedAt := ids[i], latest[ids[i]]
		if covers(current, changedAt) {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			stale, outcome, err := e.sweepOne(ctx, id, current, changedAt)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if stale {
				res.Stale++
			}
			if outcome == Wrote {
				res.Written++
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return res, fmt.Errorf("sweep: %d of %d stale counters failed, first: %w", len(errs), res.Stale, errs[0])
	}
	return res, nil
}

// sweepOne rolls up counter id if its roll-up, current, differs from its exact value. The times of a
// shard write (the database's clock) and of a roll-up's computation (an instance's clock) cannot be
// compared exactly, so a roll-up computed close to the counter's last write is checked by value: one
// aggregation read instead of a needless write.
func (e *Engine) sweepOne(ctx context.Context, id string, current *Document, changedAt time.Time) (stale bool, _ Outcome, _ error) {
	if current != nil {
		sum, err := e.counters.Sum(ctx, id)
		if err != nil {
			return false, Covered, err
		}
		if sum == current.Count {
			return false, Covered, nil
		}
	}
	outcome, err := e.Refresh(ctx, id, changedAt, SourceScheduler)
	return true, outcome, err
}

// recentlyWritten maps each counter with a shard written since minute to its latest shard write.
func (e *Engine) recentlyWritten(ctx context.Context, minute int64, res *SweepResult) (map[string]time.Time, error) {
	latest := make(map[string]time.Time)
	it := e.client.CollectionGroup(shared.ShardsCollection).
		Where(shared.FieldTouchedMinute, ">=", minute).
		Select(). // names and update times only
		Documents(ctx)
	defer it.Stop()
	for {
		snap, err := it.Next()
		if err == iterator.Done {
			return latest, nil
		}
		if err != nil {
			return nil, fmt.Errorf("query shards written since minute %d: %w", minute, err)
		}
		res.ShardsRead++
		_, path, _ := strings.Cut(snap.Ref.Path, "/documents/")
		id, ok := e.schema.ParseShardPath(path)
		if !ok {
			continue // a "shards" collection elsewhere in the database
		}
		if snap.UpdateTime.After(latest[id]) {
			latest[id] = snap.UpdateTime
		}
	}
}
