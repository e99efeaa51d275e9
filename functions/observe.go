package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/logtally"
	"github.com/shardcount/counters/rollup"
)

// Values of the "event" field of the log lines that the log-based metrics (LogMetrics) select. A
// metric filters on these and on the fields named below: renaming one breaks
// TestLogMetricsMatchTheLinesWritten.
const (
	// EventIncrementsApplied: one line per source and minute per instance, with count (increments
	// applied) and delta (their sum).
	EventIncrementsApplied = "increments_applied"
	// EventIncrementsRefused: one line per reason and minute per instance, with count (increments
	// refused with a 4xx); the first few refusals of a token per reason and minute also get a line
	// of their own ("increment refused", with the error), which no metric counts.
	EventIncrementsRefused = "increments_refused"
	// EventTokensUnverified: one line per kind of token (id_token, app_check) and minute per
	// instance, with count (tokens the platform could not verify: 503); the first few per minute
	// also get a WARN line of their own, with the error.
	EventTokensUnverified = "tokens_unverified"
	// EventIncrementOutcomeUnknown: one ERROR line per 504.
	EventIncrementOutcomeUnknown = "increment_outcome_unknown"
	// EventRollupWritten: one line per source and minute per instance, with count (roll-ups written)
	// and age_seconds_max (the largest rollup.Written.Age).
	EventRollupWritten = "rollup_written"
	// EventRollupCanary: one line per scheduled sweep, with outcome: canaryFresh when the trigger
	// rolled up the canary counter's previous increment, canaryStale when not.
	EventRollupCanary = "rollup_canary"
	// EventRollupSweep: one line per scheduled sweep, with stale, written (fixed) and done.
	EventRollupSweep = "rollup_sweep"
	// EventFoldError: one ERROR line per extension fold that failed or shard left unfolded, with kind.
	EventFoldError = "fold_error"
	// EventFoldWaiting: one WARN line per extension fold event whose shards wait for their main
	// document (kind waiting: redelivery asked; dropped: deleted uncounted after extshards.MaxWait),
	// with the shards' count.
	EventFoldWaiting = "fold_waiting"
	// EventCollectionDrift: one ERROR line per scheduled sweep and quiet collection counter that
	// differs from count()/sum() of its documents, with value and documents.
	EventCollectionDrift = "collection_counter_drift"
)

// Sources of applied increments (the "source" field of EventIncrementsApplied).
const (
	sourceHTTP   = "http"
	sourcePubSub = "pubsub"
)

// refusalsInFull is how many token refusals per reason and minute an instance logs in full.
const refusalsInFull = 5

// newTallies returns the per-instance tallies of applied and refused increments, of tokens not
// verified and of roll-ups written.
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
	s.applied.Flush(ctx)
	s.refused.Flush(ctx)
	s.unverified.Flush(ctx)
	s.written.Flush(ctx)
}

// logRollupWritten counts a roll-up the engine wrote, for the roll-up age metric.
func (s *Service) logRollupWritten(w rollup.Written) {
	s.written.Observe(context.Background(), w.Source, w.Age.Seconds())
}

// countedIncrement runs increment, counts what the domain applied or the refusal by its reason,
// and marks a replayed answer. Failures (503, 504, 500) are logged where they are answered.
func (s *Service) countedIncrement(w http.ResponseWriter, r *http.Request) (int, any, error) {
	res, err := s.increment(w, r)
	ctx := context.WithoutCancel(r.Context())
	if err == nil {
		if res.applied.Duplicate {
			w.Header().Set(headerReplayed, "true")
		}
		s.countApplied(ctx, sourceHTTP, res.applied)
		return http.StatusOK, res.answer, nil
	}
	if reason, ok := refusalReason(err); ok {
		var details []slog.Attr
		var reqErr *requestError
		if errors.As(err, &reqErr) && reqErr.cause != nil {
			details = []slog.Attr{slog.String("error", reqErr.cause.Error())}
		}
		s.refused.Add(ctx, reason, 1, slog.LevelInfo, details...)
	}
	return 0, nil, err
}

// countApplied counts each shard write of res, unless res repeats an earlier application.
func (s *Service) countApplied(ctx context.Context, source string, res counter.Result) {
	if res.Duplicate {
		return
	}
	for _, a := range res.Applied {
		if a.Shard >= 0 {
			s.applied.Add(ctx, source, a.Delta, slog.LevelInfo)
		}
	}
}

// refusalReason names why an increment was refused with a 4xx (the "reason" of
// EventIncrementsRefused), or says that err is no refusal.
func refusalReason(err error) (string, bool) {
	var (
		reqErr   *requestError
		fieldErr *wire.FieldError
	)
	switch {
	case errors.As(err, &reqErr) && reqErr.reason != "":
		return reqErr.reason, true
	case errors.As(err, &reqErr) && reqErr.status == http.StatusUnprocessableEntity:
		return "key_reused", true
	case errors.As(err, &reqErr) && reqErr.status >= 400 && reqErr.status < 500:
		return fmt.Sprintf("http_%d", reqErr.status), true
	case errors.As(err, &fieldErr), errors.Is(err, counter.ErrMemberRequired), errors.Is(err, counter.ErrNotDistinct), errors.Is(err, counter.ErrSourceCounter):
		return "invalid_request", true
	case errors.Is(err, counter.ErrNotFound):
		return "no_counter", true
	}
	return "", false
}

// tokenKind names a kind of token in log lines.
func tokenKind(k callerauth.Kind) string {
	if k == callerauth.AppCheckToken {
		return "app_check"
	}
	return "id_token"
}

// tokenRefusal is the reason of a refused token (the "reason" of EventIncrementsRefused).
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
