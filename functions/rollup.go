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
func (s *Service) RollupOnShardWrite(ctx context.Context, e event.Event) error {
	// Firestore's clock; a delete has none, so its arrival stands in.
	changedAt := time.Now()
	if written, ok, err := eventhttp.WrittenDocumentUpdateTime(e.Data()); err != nil {
		s.log.WarnContext(ctx, "event data is not a DocumentEventData; using its arrival as the time of the change",
			"event_id", e.ID(), "error", err.Error())
	} else if ok {
		changedAt = written
	}
	id, ok := s.cfg.Schema().ParseShardPath(e.Subject())
	if !ok {
		// Redelivery cannot fix this: acknowledge.
		s.log.ErrorContext(ctx, "event subject is not a shard document; event dropped",
			"event_id", e.ID(), "subject", e.Subject(), "type", e.Type(), "want_pattern", s.cfg.Schema().ShardPathPattern())
		return nil
	}
	logCtx := context.WithoutCancel(ctx)
	carried, err := s.engine.Notify(ctx, id, changedAt, rollup.SourceTrigger, func(err error) {
		level, what := slog.LevelError, "roll up on shard write failed; event acknowledged"
		if shared.IsRetryable(err) {
			level, what = slog.LevelWarn, "roll up on shard write failed for a minute; the scheduled sweep will roll it up"
		}
		s.log.LogAttrs(logCtx, level, what, slog.String("counter", id), slog.String("event_id", e.ID()), slog.String("error", err.Error()))
	})
	return s.eventResult(ctx, e, err, "roll up on shard write", slog.String("counter", id), slog.Bool("carried", carried))
}

// RollupScheduled is the CloudEvent entry point for the scheduler tick: it rolls up counters whose
// roll-up missed its events, resuming across ticks, checks the canary (CanaryCounter) and probes
// the collection counters' triggers (probeTriggers).
func (s *Service) RollupScheduled(ctx context.Context, e event.Event) error {
	s.checkCanary(ctx)
	s.probeTriggers(ctx)
	defer func() {
		bumpCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), canaryTimeout)
		defer cancel()
		s.bumpCanary(bumpCtx)
	}()
	res, err := s.engine.Sweep(ctx, s.cfg.RollupSweepLookback)
	attrs := []slog.Attr{slog.String("event", EventRollupSweep),
		slog.Int("counters", res.Counters), slog.Int("reads", res.Reads), slog.Int("checked", res.Checked),
		slog.Int("stale", res.Stale), slog.Int("written", res.Written), slog.Int("regrouped", res.Regrouped),
		slog.Int("tops_behind", res.TopsBehind), slog.Int("tops_failed", res.TopsFailed), slog.Bool("done", res.Done)}
	if err == nil { // INFO: a metric reads it
		s.log.LogAttrs(ctx, slog.LevelInfo, "scheduled roll-up sweep", append(attrs, slog.String("event_id", e.ID()))...)
		s.reportDrift(ctx)
		return nil
	}
	return s.eventResult(ctx, e, err, "scheduled roll-up sweep", attrs...)
}

// eventResult logs a CloudEvent outcome: transient failures return an error (redelivery), the rest
// are logged at ERROR and acknowledged (nil).
func (s *Service) eventResult(ctx context.Context, e event.Event, err error, what string, attrs ...slog.Attr) error {
	attrs = append(attrs, slog.String("event_id", e.ID()))
	switch {
	case err == nil:
		s.log.LogAttrs(ctx, slog.LevelDebug, what, attrs...)
		return nil
	case shared.IsRetryable(err) || ctx.Err() != nil:
		s.log.LogAttrs(ctx, slog.LevelWarn, what+" failed; asking for redelivery", append(attrs, slog.String("error", err.Error()))...)
		return fmt.Errorf("%s: %w", what, err)
	default:
		s.log.LogAttrs(ctx, slog.LevelError, what+" failed; event acknowledged", append(attrs, slog.String("error", err.Error()))...)
		return nil
	}
}

// driftQuiet is how long a collection counter has had no write before the sweep checks it.
const driftQuiet = 3 * time.Minute

// reportDrift checks quiet collection counters (sources.Counting.CheckQuiet) and logs what it
// repaired: EventCollectionDrift for each that differed from its documents, and
// EventCollectionUnverified for each it could not check.
func (s *Service) reportDrift(ctx context.Context) {
	schema, client := s.cfg.Schema(), s.counting.Client()
	check, err := s.counting.CheckQuiet(ctx, client.Collection(schema.Counters), client.Collection(schema.Sweep()).Doc("drift"), time.Now(), driftQuiet)
	if err != nil {
		s.log.WarnContext(ctx, "check quiet collection counters failed", "error", err.Error())
	}
	for id, why := range check.Unverified {
		s.log.ErrorContext(ctx, "collection counter could not be checked; skipped (run go run ./cmd/sources verify)", "event", EventCollectionUnverified,
			"counter", id, "error", why)
	}
	for _, d := range check.Drifts {
		s.log.ErrorContext(ctx, "collection counter differed from its documents; repaired", "event", EventCollectionDrift,
			"counter", d.Counter, "collection", d.Collection, "value", d.Value, "documents", d.Documents)
	}
	for _, id := range check.Redefined {
		s.log.InfoContext(ctx, "collection counter rebased under its changed declaration", "counter", id)
	}
	for _, id := range check.Mirrors {
		s.log.WarnContext(ctx, "collection counter's mirror differed from its roll-up; rewritten", "counter", id)
	}
}
