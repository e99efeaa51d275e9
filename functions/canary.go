package functions

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared/wire"
)

// CanaryCounter is incremented by each RollupScheduled tick so the next can check the trigger
// rolled it up (EventRollupCanary).
const CanaryCounter = wire.ReservedCounterPrefix + "canary"

// canaryTimeout bounds the canary's increment, which runs also when the sweep ran out of time.
const canaryTimeout = 10 * time.Second

// Outcomes of a canary check (the "outcome" field of EventRollupCanary).
const (
	canaryFresh = "fresh"
	canaryStale = "stale"
)

// checkCanary logs whether the canary's roll-up equals its exact value, a check that fails as
// stale; nothing before the canary's first increment. Run it before the sweep.
func (s *Service) checkCanary(ctx context.Context) {
	doc, err := s.rollups.Get(ctx, CanaryCounter)
	var sum int64
	if err == nil {
		sum, err = s.reader.Sum(ctx, CanaryCounter)
	}
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "check the canary roll-up failed", slog.String("event", EventRollupCanary),
			slog.String("outcome", canaryStale), slog.String("counter", CanaryCounter), slog.String("error", err.Error()))
		return
	}
	if sum == 0 && doc == nil {
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

// bumpCanary increments the canary, creating it if needed.
func (s *Service) bumpCanary(ctx context.Context) {
	_, err := s.increments.Increment(ctx, counter.Request{Counter: CanaryCounter, Delta: 1})
	if errors.Is(err, counter.ErrNotFound) {
		if _, err = s.lifecycle.Configure(ctx, CanaryCounter, counter.Settings{NumShards: 1}); err == nil {
			_, err = s.increments.Increment(ctx, counter.Request{Counter: CanaryCounter, Delta: 1})
		}
	}
	if err != nil {
		s.log.WarnContext(ctx, "increment the canary failed", "counter", CanaryCounter, "error", err.Error())
	}
}

// canaryRecords holds each declaration's probe record (sources.Counting.ProbeTriggers), in the
// sweep's collection, which only the functions may read or write.
func (s *Service) canaryRecords() *firestore.CollectionRef {
	return s.counting.Client().Collection(s.cfg.Schema().Sweep()).Doc("canaries").Collection("declarations")
}

// probeTriggers logs EventCollectionCanary per declaration with "canary": true: whether its
// count-documents trigger saw the previous probe (a check that fails reads stale; nothing before
// the first probe), then sends the next probe.
func (s *Service) probeTriggers(ctx context.Context) {
	for _, p := range s.counting.ProbeTriggers(ctx, s.canaryRecords()) {
		attrs := []slog.Attr{slog.String("event", EventCollectionCanary), slog.String("declaration", p.Declaration), slog.String("document", p.Document)}
		switch {
		case p.CheckErr != nil:
			s.log.LogAttrs(ctx, slog.LevelWarn, "check the collection trigger's probe failed", append(attrs, slog.String("outcome", canaryStale), slog.String("error", p.CheckErr.Error()))...)
		case p.Checked:
			outcome := canaryStale
			if p.Fresh {
				outcome = canaryFresh
			}
			s.log.LogAttrs(ctx, slog.LevelInfo, "collection trigger's probe checked", append(attrs, slog.String("outcome", outcome))...)
		}
		if p.SendErr != nil {
			s.log.WarnContext(ctx, "send the collection trigger's probe failed; the next check reads stale", "declaration", p.Declaration, "error", p.SendErr.Error())
		}
	}
}
