package rollup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
)

// sweepConcurrency bounds the counters one sweep checks at once.
const sweepConcurrency = 16

// sweepPage is how many changed counters one query of a sweep returns.
const sweepPage = 100

// DefaultSweepBudget is how long a sweep runs when its context has no deadline.
const DefaultSweepBudget = 4 * time.Minute

// stampLag: a touched_minute of m stands for writes before minute m+stampLag.
const stampLag = 2

// sweepMargin is kept back from ctx's deadline to save progress.
const sweepMargin = 5 * time.Second

// SweepResult counts what a sweep found and did; Reads excludes Refresh's. Done is false when it ran
// out of time; TopsFailed are retried by the next sweep.
type SweepResult struct {
	Counters               int
	Reads                  int
	Checked                int
	Stale                  int
	Written                int
	Done                   bool
	Skipped                int
	Regrouped              int
	TopsBehind, TopsFailed int
}

// SkippedCounter is a counter a sweep skipped and why.
type SkippedCounter struct {
	ID     string
	Reason string
}

// SkippedError is a finished sweep's error naming the counters whose value or roll-up cannot be
// computed; no redelivery can help.
type SkippedError struct {
	Skipped []SkippedCounter
}

func (e *SkippedError) Error() string {
	parts := make([]string, len(e.Skipped))
	for i, c := range e.Skipped {
		parts[i] = fmt.Sprintf("%q: %s", c.ID, c.Reason)
	}
	return fmt.Sprintf("sweep skipped %d counters that cannot be rolled up until their documents are fixed: %s",
		len(e.Skipped), strings.Join(parts, "; "))
}

// Is makes a SkippedError match counter.ErrUncountable.
func (e *SkippedError) Is(target error) bool { return target == counter.ErrUncountable }

// sweepState is the sweep's progress: an unfinished pass began at PassMinute and stopped after
// (AfterMinute, AfterID).
type sweepState struct {
	FromMinute  int64     `firestore:"from_minute"`
	PassMinute  int64     `firestore:"pass_minute"`
	AfterMinute int64     `firestore:"after_minute"`
	AfterID     string    `firestore:"after_id"`
	TopsDue     []topsDue `firestore:"tops_due,omitempty"`
}

// Sweep rolls up every counter changed since the previous pass (the first: within lookback) whose
// roll-up differs from its value or group, and refreshes top lists behind. Out of time, it saves its
// progress and returns Done false; failed or cancelled, it saves it too and returns the error; it
// skips uncountable counters (*SkippedError).
func (e *Engine) Sweep(ctx context.Context, lookback time.Duration) (SweepResult, error) {
	fs := e.sweeper
	stopBy := e.clock.Now().Add(DefaultSweepBudget)
	if deadline, ok := ctx.Deadline(); ok {
		stopBy = deadline.Add(-sweepMargin)
	}
	res := SweepResult{Reads: 1}
	var skipped []SkippedCounter
	stateRef := fs.schema.SweepStateRef(fs.client)
	state, err := e.readSweepState(ctx, stateRef, lookback)
	if err != nil {
		return res, err
	}
	if state.PassMinute == 0 {
		state.PassMinute = shared.UnixMinute(e.clock.Now())
	}
	due := &topsDueList{until: stopBy}
	due.retry(ctx, fs, state.TopsDue, &res)
	// savePlace keeps the pass's place after its last finished page, so that a pass cut short (out
	// of time, failed, or its request cancelled) is resumed there, not begun again.
	savePlace := func() error {
		state.TopsDue = due.list
		saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sweepMargin)
		defer cancel()
		if _, err := stateRef.Set(saveCtx, state); err != nil {
			return fmt.Errorf("save sweep progress: %w", err)
		}
		return nil
	}
	var lastPage time.Duration // the next page is expected to take as long
	for {
		pageStart := e.clock.Now()
		q := fs.client.Collection(fs.schema.Counters).
			Where(shared.FieldTouchedMinute, ">=", state.FromMinute).
			OrderBy(shared.FieldTouchedMinute, firestore.Asc).
			OrderBy(firestore.DocumentID, firestore.Asc).
			Limit(sweepPage)
		if state.AfterID != "" {
			q = q.StartAfter(state.AfterMinute, state.AfterID)
		}
		counters, err := q.Documents(ctx).GetAll()
		if err != nil {
			return res, errors.Join(fmt.Errorf("query counters changed since minute %d: %w", state.FromMinute, err), savePlace())
		}
		res.Counters += len(counters)
		res.Reads += max(1, len(counters))
		if err := e.sweepPage(ctx, counters, &res, &skipped, due); err != nil {
			return res, errors.Join(err, savePlace())
		}
		if len(counters) < sweepPage {
			break
		}
		last := counters[len(counters)-1]
		minute, _ := last.DataAt(shared.FieldTouchedMinute)
		state.AfterMinute, _ = minute.(int64)
		state.AfterID = last.Ref.ID
		lastPage = e.clock.Now().Sub(pageStart)
		if !e.clock.Now().Add(lastPage).Before(stopBy) {
			if err := savePlace(); err != nil {
				return res, err
			}
			return res, skippedError(skipped)
		}
	}
	res.Done = true
	if _, err := stateRef.Set(ctx, sweepState{FromMinute: state.PassMinute - stampLag, TopsDue: due.list}); err != nil {
		return res, fmt.Errorf("save sweep state: %w", err)
	}
	return res, skippedError(skipped)
}

// skippedError is nil, or a *SkippedError of skipped.
func skippedError(skipped []SkippedCounter) error {
	if len(skipped) == 0 {
		return nil
	}
	return &SkippedError{Skipped: skipped}
}

// readSweepState reads the progress; the first sweep starts lookback ago.
func (e *Engine) readSweepState(ctx context.Context, ref *firestore.DocumentRef, lookback time.Duration) (sweepState, error) {
	snap, err := ref.Get(ctx)
	if status.Code(err) == codes.NotFound {
		return sweepState{FromMinute: shared.UnixMinute(e.clock.Now().Add(-lookback))}, nil
	}
	if err != nil {
		return sweepState{}, fmt.Errorf("read sweep state: %w", err)
	}
	var state sweepState
	if err := snap.DataTo(&state); err != nil {
		return sweepState{}, fmt.Errorf("decode sweep state: %w", err)
	}
	return state, nil
}

// sweepPage rolls up the counters of a page whose roll-up may be stale or regrouped; uncountable
// counters go to skipped, failed top lists to due.
func (e *Engine) sweepPage(ctx context.Context, counters []*firestore.DocumentSnapshot, res *SweepResult, skipped *[]SkippedCounter, due *topsDueList) error {
	fs := e.sweeper
	if len(counters) == 0 {
		return nil
	}
	refs := make([]*firestore.DocumentRef, len(counters))
	for i, c := range counters {
		refs[i] = fs.schema.RollupRef(fs.client, c.Ref.ID)
	}
	snaps, err := fs.client.GetAll(ctx, refs)
	if err != nil {
		return fmt.Errorf("read roll-ups of %d changed counters: %w", len(refs), err)
	}
	res.Reads += len(snaps)
	var (
		mu     sync.Mutex
		errs   []error
		wg     sync.WaitGroup
		slots  = make(chan struct{}, sweepConcurrency)
		checks []topsCheck
	)
	for i, snap := range snaps {
		current, err := decodeRollup(snap)
		if err != nil {
			mu.Lock()
			res.Skipped++
			*skipped = append(*skipped, SkippedCounter{ID: counters[i].Ref.ID, Reason: err.Error()})
			mu.Unlock()
			continue
		}
		id := counters[i].Ref.ID
		regrouped := current != nil && current.Group != counter.GroupOf(counters[i])
		if current != nil && !regrouped {
			checks = append(checks, topsCheck{id: id, rollup: current, version: snap.UpdateTime, windows: counter.WindowsOf(counters[i])})
		}
		minute, _ := counters[i].DataAt(shared.FieldTouchedMinute)
		touched, _ := minute.(int64)
		if !regrouped && covers(current, time.Unix((touched+stampLag)*60, 0)) {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			var (
				stale   bool
				outcome Outcome
				err     error
			)
			if regrouped {
				outcome, err = e.Refresh(ctx, id, counters[i].UpdateTime, SourceScheduler)
			} else {
				stale, outcome, err = e.sweepOne(ctx, id, current, snaps[i].ReadTime)
			}
			mu.Lock()
			defer mu.Unlock()
			if regrouped {
				res.Regrouped++
			} else {
				res.Checked++
				res.Reads++
			}
			var tops *topListError
			switch {
			case errors.As(err, &tops):
				due.add(tops.due, res)
			case errors.Is(err, counter.ErrUncountable):
				res.Skipped++
				*skipped = append(*skipped, SkippedCounter{ID: id, Reason: err.Error()})
			case err != nil:
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
		return fmt.Errorf("sweep: %d of %d counters failed, first: %w", len(errs), len(counters), errs[0])
	}
	e.sweepTops(ctx, checks, res, due)
	return nil
}

// sweepOne rolls up counter id if current (read at readAt) differs from its exact value.
func (e *Engine) sweepOne(ctx context.Context, id string, current *Document, readAt time.Time) (stale bool, _ Outcome, _ error) {
	sum, err := e.sweeper.reader.Sum(ctx, id)
	if err != nil {
		return false, Covered, err
	}
	if current != nil && sum == current.Count {
		return false, Covered, nil
	}
	outcome, err := e.Refresh(ctx, id, readAt, SourceScheduler)
	return true, outcome, err
}
