package functions

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
)

// RollupOnShardWrite is the CloudEvent entry point for shard writes: it recomputes the counter's
// roll-up within about ROLLUP_INTERVAL (see rollup.Engine.Notify).
func (h *rollupHandler) RollupOnShardWrite(ctx context.Context, e event.Event) error {
	// Firestore's clock; a delete has none, so its arrival stands in.
	changedAt := time.Now()
	if written, ok, err := eventhttp.WrittenDocumentUpdateTime(e.Data()); err != nil {
		h.log.WarnContext(ctx, "event data is not a DocumentEventData; using its arrival as the time of the change",
			"event_id", e.ID(), "error", err.Error())
	} else if ok {
		changedAt = written
	}
	id, ok := h.cfg.Schema().ParseShardPath(e.Subject())
	if !ok {
		// Redelivery cannot fix this: acknowledge.
		h.log.ErrorContext(ctx, "event subject is not a shard document; event dropped",
			"event_id", e.ID(), "subject", e.Subject(), "type", e.Type(), "want_pattern", h.cfg.Schema().ShardPathPattern())
		return nil
	}
	logCtx := context.WithoutCancel(ctx)
	carried, err := h.engine.Notify(ctx, id, changedAt, rollup.SourceTrigger, func(err error) {
		level, what := slog.LevelError, "roll up on shard write failed; event acknowledged"
		if shared.IsRetryable(err) {
			level, what = slog.LevelWarn, "roll up on shard write failed for a minute; the scheduled sweep will roll it up"
		}
		h.log.LogAttrs(logCtx, level, what, slog.String("counter", id), slog.String("event_id", e.ID()), slog.String("error", err.Error()))
	})
	return eventResult(ctx, h.log, e, err, "roll up on shard write", slog.String("counter", id), slog.Bool("carried", carried))
}

// RollupScheduled is the CloudEvent entry point for the scheduler tick: it rolls up counters whose
// roll-up missed its events, resuming across ticks, checks the canary (CanaryCounter) and probes
// the collection counters' triggers (probeTriggers).
func (h *rollupHandler) RollupScheduled(ctx context.Context, e event.Event) error {
	h.checkCanary(ctx)
	h.probeTriggers(ctx)
	defer func() {
		bumpCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), canaryTimeout)
		defer cancel()
		h.bumpCanary(bumpCtx)
	}()
	res, err := h.engine.Sweep(ctx, h.cfg.RollupSweepLookback)
	attrs := []slog.Attr{slog.String("event", EventRollupSweep),
		slog.Int("counters", res.Counters), slog.Int("reads", res.Reads), slog.Int("checked", res.Checked),
		slog.Int("stale", res.Stale), slog.Int("written", res.Written), slog.Int("regrouped", res.Regrouped),
		slog.Int("tops_behind", res.TopsBehind), slog.Int("tops_failed", res.TopsFailed), slog.Bool("done", res.Done)}
	if err == nil { // INFO: a metric reads it
		h.log.LogAttrs(ctx, slog.LevelInfo, "scheduled roll-up sweep", append(attrs, slog.String("event_id", e.ID()))...)
		h.reportDrift(ctx)
		return nil
	}
	return eventResult(ctx, h.log, e, err, "scheduled roll-up sweep", attrs...)
}

// eventResult logs a CloudEvent outcome to log: transient failures return an error (redelivery),
// the rest are logged at ERROR and acknowledged (nil).
func eventResult(ctx context.Context, log *slog.Logger, e event.Event, err error, what string, attrs ...slog.Attr) error {
	attrs = append(attrs, slog.String("event_id", e.ID()))
	switch {
	case err == nil:
		log.LogAttrs(ctx, slog.LevelDebug, what, attrs...)
		return nil
	case shared.IsRetryable(err) || ctx.Err() != nil:
		log.LogAttrs(ctx, slog.LevelWarn, what+" failed; asking for redelivery", append(attrs, slog.String("error", err.Error()))...)
		return fmt.Errorf("%s: %w", what, err)
	default:
		log.LogAttrs(ctx, slog.LevelError, what+" failed; event acknowledged", append(attrs, slog.String("error", err.Error()))...)
		return nil
	}
}

// driftQuiet is how long a collection counter has had no write before the sweep checks it.
const driftQuiet = 3 * time.Minute

// reportDrift checks quiet collection counters (sources.Counting.CheckQuiet) and logs what it
// repaired: EventCollectionDrift for each that differed from its documents, and
// EventCollectionUnverified for each it could not check.
func (h *rollupHandler) reportDrift(ctx context.Context) {
	schema, client := h.cfg.Schema(), h.counting.Client()
	check, err := h.counting.CheckQuiet(ctx, client.Collection(schema.Counters), client.Collection(schema.Sweep()).Doc("drift"), time.Now(), driftQuiet)
	if err != nil {
		h.log.WarnContext(ctx, "check quiet collection counters failed", "error", err.Error())
	}
	for id, why := range check.Unverified {
		h.log.ErrorContext(ctx, "collection counter could not be checked; skipped (run go run ./cmd/sources verify)", "event", EventCollectionUnverified,
			"counter", id, "error", why)
	}
	for _, d := range check.Drifts {
		h.log.ErrorContext(ctx, "collection counter differed from its documents; repaired", "event", EventCollectionDrift,
			"counter", d.Counter, "collection", d.Collection, "value", d.Value, "documents", d.Documents)
	}
	for _, id := range check.Redefined {
		h.log.InfoContext(ctx, "collection counter rebased under its changed declaration", "counter", id)
	}
	for _, id := range check.Mirrors {
		h.log.WarnContext(ctx, "collection counter's mirror differed from its roll-up; rewritten", "counter", id)
	}
}
