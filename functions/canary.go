package functions

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/shared/wire"
	"github.com/shardcount/counters/sources"
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
func (h *rollupHandler) checkCanary(ctx context.Context) {
	doc, err := h.rollups.Get(ctx, CanaryCounter)
	var sum int64
	if err == nil {
		sum, err = h.reader.Sum(ctx, CanaryCounter)
	}
	if err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "check the canary roll-up failed", slog.String("event", EventRollupCanary),
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
	h.log.LogAttrs(ctx, slog.LevelInfo, "canary roll-up checked", slog.String("event", EventRollupCanary),
		slog.String("outcome", outcome), slog.String("counter", CanaryCounter), slog.Int64("behind", sum-rolledUp))
}

// bumpCanary increments the canary, creating it if needed.
func (h *rollupHandler) bumpCanary(ctx context.Context) {
	_, err := h.increments.Increment(ctx, counter.Request{Counter: CanaryCounter, Delta: 1})
	if errors.Is(err, counter.ErrNotFound) {
		if _, err = h.lifecycle.Configure(ctx, CanaryCounter, counter.Settings{NumShards: 1}); err == nil {
			_, err = h.increments.Increment(ctx, counter.Request{Counter: CanaryCounter, Delta: 1})
		}
	}
	if err != nil {
		h.log.WarnContext(ctx, "increment the canary failed", "counter", CanaryCounter, "error", err.Error())
	}
}

// canaryRecords holds each declaration's probe record (sources.Counting.ProbeTriggers), in the
// sweep's collection of schema, which only the functions may read or write.
func canaryRecords(counting *sources.Counting, schema shared.Schema) *firestore.CollectionRef {
	return counting.Client().Collection(schema.Sweep()).Doc("canaries").Collection("declarations")
}

// probeTriggers logs EventCollectionCanary per declaration with "canary": true: whether its
// count-documents trigger saw the previous probe (a check that fails reads stale; nothing before
// the first probe), then sends the next probe.
func (h *rollupHandler) probeTriggers(ctx context.Context) {
	for _, p := range h.counting.ProbeTriggers(ctx, canaryRecords(h.counting, h.cfg.Schema())) {
		attrs := []slog.Attr{slog.String("event", EventCollectionCanary), slog.String("declaration", p.Declaration), slog.String("document", p.Document)}
		switch {
		case p.CheckErr != nil:
			h.log.LogAttrs(ctx, slog.LevelWarn, "check the collection trigger's probe failed", append(attrs, slog.String("outcome", canaryStale), slog.String("error", p.CheckErr.Error()))...)
		case p.Checked:
			outcome := canaryStale
			if p.Fresh {
				outcome = canaryFresh
			}
			h.log.LogAttrs(ctx, slog.LevelInfo, "collection trigger's probe checked", append(attrs, slog.String("outcome", outcome))...)
		}
		if p.SendErr != nil {
			h.log.WarnContext(ctx, "send the collection trigger's probe failed; the next check reads stale", "declaration", p.Declaration, "error", p.SendErr.Error())
		}
	}
}
