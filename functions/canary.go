package functions

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shardcount/counters/counter"
)

// CanaryCounter is the counter RollupScheduled increments at each tick, so that the next tick can
// tell whether the shard-write trigger rolled it up (EventRollupCanary): a dead trigger reads as
// stale, not as no data (docs/operations.md, "Service level objectives").
const CanaryCounter = "_counters_canary"

// canaryTimeout bounds the canary's increment, which runs also when the sweep ran out of time.
const canaryTimeout = 10 * time.Second

// Outcomes of a canary check (the "outcome" field of EventRollupCanary).
const (
	canaryFresh = "fresh"
	canaryStale = "stale"
)

// checkCanary logs whether the canary's roll-up equals its exact value. It runs before the sweep,
// which would roll the canary up itself, and logs nothing before the canary's first increment.
func (s *Service) checkCanary(ctx context.Context) {
	doc, err := s.rollups.Get(ctx, CanaryCounter)
	var sum int64
	if err == nil {
		sum, err = s.counters.Sum(ctx, CanaryCounter)
	}
	if err != nil {
		s.log.WarnContext(ctx, "check the canary roll-up failed", "counter", CanaryCounter, "error", err.Error())
		return
	}
	if sum == 0 {
		return
	}
	outcome, rolledUp := canaryStale, int64(0)
	if doc != nil {
		rolledUp = doc.Count
	}
	if rolledUp == sum {
		outcome = canaryFresh
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "canary roll-up checked", slog.String("event", EventRollupCanary),
		slog.String("outcome", outcome), slog.String("counter", CanaryCounter), slog.Int64("behind", sum-rolledUp))
}

// bumpCanary increments the canary, creating it with one shard if increments may not create counters.
func (s *Service) bumpCanary(ctx context.Context) {
	_, err := s.counters.Apply(ctx, counter.Request{Counter: CanaryCounter, Delta: 1})
	if errors.Is(err, counter.ErrNotFound) {
		if _, err = s.counters.Configure(ctx, CanaryCounter, counter.Settings{NumShards: 1}); err == nil {
			_, err = s.counters.Apply(ctx, counter.Request{Counter: CanaryCounter, Delta: 1})
		}
	}
	if err != nil {
		s.log.WarnContext(ctx, "increment the canary failed", "counter", CanaryCounter, "error", err.Error())
	}
}
