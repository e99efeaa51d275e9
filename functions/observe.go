package functions

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/logtally"
	"github.com/shardcount/counters/rollup"
)

// Values of the "event" log field that the log-based metrics (LogMetrics) select; keep them stable.
const (
	// EventIncrementsApplied: per source and minute per instance, with count and delta.
	EventIncrementsApplied = "increments_applied"
	// EventIncrementsRefused: per reason and minute per instance, with count (4xx).
	EventIncrementsRefused = "increments_refused"
	// EventTokensUnverified: per token kind and minute per instance, with count (503s).
	EventTokensUnverified = "tokens_unverified"
	// EventIncrementOutcomeUnknown: one ERROR line per 504.
	EventIncrementOutcomeUnknown = "increment_outcome_unknown"
	// EventRollupWritten: per source and minute per instance, with count and age_seconds_max.
	EventRollupWritten = "rollup_written"
	// EventRollupCanary: per sweep, with outcome canaryFresh or canaryStale.
	EventRollupCanary = "rollup_canary"
	// EventRollupSweep: per sweep, with stale, written and done.
	EventRollupSweep = "rollup_sweep"
	// EventFoldError: ERROR per failed extension fold or unfolded shard, with kind.
	EventFoldError = "fold_error"
	// EventFoldWaiting: WARN per fold event whose shards wait for their main document, with kind
	// (waiting or dropped) and count.
	EventFoldWaiting = "fold_waiting"
	// EventCollectionRefused: ERROR per document write whose counter ID names a counter its
	// declaration did not create (an ordinary counter, or another declaration's).
	EventCollectionRefused = "collection_change_refused"
	// EventCollectionUnverified: ERROR per sweep and quiet collection counter it could not verify.
	EventCollectionUnverified = "collection_counter_unverified"
	// EventCollectionDrift: ERROR per sweep and quiet collection counter off its documents, repaired.
	EventCollectionDrift = "collection_counter_drift"
	// EventCollectionCanary: per sweep and declaration with "canary": true, with outcome
	// canaryFresh or canaryStale (its trigger saw the previous probe, or not) and declaration.
	EventCollectionCanary = "collection_canary"
)

// Sources of applied increments (the "source" field of EventIncrementsApplied).
const (
	sourceHTTP   = "http"
	sourcePubSub = "pubsub"
)

// refusalsInFull is how many token refusals per reason and minute an instance logs in full.
const refusalsInFull = 5

// newTallies returns the per-instance tallies.
func newTallies(log *slog.Logger) (applied, refused, unverified, written *logtally.Tally) {
	applied = logtally.New(log, logtally.Options{Event: EventIncrementsApplied, LabelKey: "source", SumKey: "delta",
		Summary: "increments applied"})
	refused = logtally.New(log, logtally.Options{Event: EventIncrementsRefused, LabelKey: "reason",
		Message: "increment refused", Summary: "increments refused", Full: refusalsInFull})
	unverified = logtally.New(log, logtally.Options{Event: EventTokensUnverified, LabelKey: "kind",
		Message: "caller's token could not be verified", Summary: "caller tokens not verified", Full: refusalsInFull})
	written = logtally.New(log, logtally.Options{Event: EventRollupWritten, LabelKey: "source", MaxKey: "age_seconds_max",
		Summary: "roll-ups written"})
	return applied, refused, unverified, written
}

// flushTallies writes the tallies' summaries now (at shutdown).
func (s *Service) flushTallies(ctx context.Context) {
	s.increments.applied.Flush(ctx)
	s.increments.refused.Flush(ctx)
	s.increments.unverified.Flush(ctx)
	s.rollups.written.Flush(ctx)
}

// logRollupWritten counts a roll-up the engine wrote, for the roll-up age metric.
func (h *rollupHandler) logRollupWritten(w rollup.Written) {
	h.written.Observe(context.Background(), w.Source, w.Age.Seconds())
}

// countedIncrement runs increment, counts what it applied or refused, and marks a replayed answer.
func (h *incrementHandler) countedIncrement(w http.ResponseWriter, r *http.Request) (incrementResponse, error) {
	res, err := h.increment(w, r)
	ctx := context.WithoutCancel(r.Context())
	if err == nil {
		if res.applied.Duplicate {
			w.Header().Set(headerReplayed, "true")
		}
		h.countApplied(ctx, sourceHTTP, res.applied)
		return res.answer, nil
	}
	if reason := h.failureOf(err).reason; reason != "" {
		var details []slog.Attr
		var reqErr *requestError
		if errors.As(err, &reqErr) && reqErr.cause != nil {
			details = []slog.Attr{slog.String("error", reqErr.cause.Error())}
		}
		h.refused.Add(ctx, reason, 1, slog.LevelInfo, details...)
	}
	return incrementResponse{}, err
}

// countApplied counts each shard write of res, unless res repeats an earlier application.
func (h *incrementHandler) countApplied(ctx context.Context, source string, res counter.Result) {
	if res.Duplicate {
		return
	}
	for _, a := range res.Applied {
		if a.Shard >= 0 {
			h.applied.Add(ctx, source, a.Delta, slog.LevelInfo)
		}
	}
}

// tokenKind names a kind of token in log lines.
func tokenKind(k callerauth.Kind) string {
	if k == callerauth.AppCheckToken {
		return "app_check"
	}
	return "id_token"
}

// tokenRefusal is the reason of a refused token.
func tokenRefusal(e *callerauth.TokenError) string {
	kind := tokenKind(e.Kind)
	switch e.Reason {
	case callerauth.Missing:
		return kind + "_missing"
	case callerauth.Anonymous:
		return kind + "_anonymous"
	case callerauth.Unverified:
		return kind + "_unverified"
	case callerauth.Replayed:
		return kind + "_replayed"
	}
	return kind + "_invalid"
}
