package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/logtally"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/shared/wire"
	"github.com/shardcount/counters/sources"
)

// Service is every entry point over one set of dependencies.
type Service struct {
	cfg        config.Config
	counters   *counter.Store
	rollups    *rollup.Store
	engine     *rollup.Engine
	folder     *extshards.Folder
	counting   *sources.Counting
	log        *slog.Logger
	applied    *logtally.Tally      // increments applied, per source (EventIncrementsApplied)
	refused    *logtally.Tally      // increments refused, per reason (EventIncrementsRefused)
	unverified *logtally.Tally      // tokens the platform could not verify, per kind (EventTokensUnverified)
	written    *logtally.Tally      // roll-ups written, per source (EventRollupWritten)
	callers    *callerauth.Verifier // nil: callers are not verified
	ids        *regexp.Regexp       // COUNTER_ID_PATTERN, anchored; nil: any valid ID
	origins    map[string]bool      // ALLOWED_ORIGINS

	betweenCountReads func(id string) // tests: runs between Count's read of the roll-up and of the exact value
}

// NewService wires the entry points to a Firestore client, with no collection counters.
func NewService(cfg config.Config, client *firestore.Client, log *slog.Logger) *Service {
	counters := counter.NewStore(client, cfg.Schema(), counter.Options{
		DefaultNumShards:     cfg.DefaultNumShards,
		ShardCountCacheTTL:   cfg.ShardCountCacheTTL,
		GroupCommitInterval:  cfg.GroupCommitInterval,
		ChangeCommitInterval: cfg.ChangeCommitInterval,
		DedupeTTL:            cfg.DedupeTTL,
		RequireExisting:      !cfg.CreateOnIncrement,
		HourBucketsKept:      cfg.HourBucketsKept,
	})
	origins := map[string]bool{}
	for _, o := range cfg.Origins() {
		origins[o] = true
	}
	applied, refused, unverified, written := newTallies(log)
	s := &Service{
		origins:    origins,
		cfg:        cfg,
		counters:   counters,
		rollups:    rollup.NewStore(client, cfg.Schema()),
		engine:     rollup.NewEngine(client, cfg.Schema(), counters, cfg.RollupInterval),
		folder:     extshards.NewFolder(client, cfg.ExtensionFoldInterval, cfg.ExtensionTargets()),
		log:        log,
		applied:    applied,
		refused:    refused,
		unverified: unverified,
		written:    written,
		ids:        cfg.CounterIDs(),
	}
	s.counting = sources.NewCounting(&sources.Set{}, counters, client, log)
	s.engine.OnWrite(s.logRollupWritten)
	return s
}

// CountSources makes s keep the collection counters of set (CountDocumentWrite).
func (s *Service) CountSources(set *sources.Set) {
	set.InheritCounterIDPattern(s.ids)
	s.counting = sources.NewCounting(set, s.counters, s.counting.Client(), s.log)
}

// checkCounterID accepts a valid document ID matching COUNTER_ID_PATTERN, else returns a
// *wire.FieldError "counter" that never reveals the pattern (logged at DEBUG).
func (s *Service) checkCounterID(id string) error {
	return s.checkIDWith(id, wire.ValidateCounterID)
}

// checkWritableCounterID is checkCounterID for a counter a caller changes: no reserved ID.
func (s *Service) checkWritableCounterID(id string) error {
	return s.checkIDWith(id, wire.ValidateWritableCounterID)
}

// checkIncrementedCounterID is checkWritableCounterID for an increment: a counter ID that a
// declaration of COUNTER_SOURCES builds is its documents' alone (counter.ErrSourceCounter), even
// before its first document makes it.
func (s *Service) checkIncrementedCounterID(id string) error {
	if err := s.checkWritableCounterID(id); err != nil {
		return err
	}
	if s.counting.Declares(id) {
		return fmt.Errorf("counter %q: %w", id, counter.ErrSourceCounter)
	}
	return nil
}

// checkIDWith is checkCounterID with validate in place of wire.ValidateCounterID.
func (s *Service) checkIDWith(id string, validate func(string) error) error {
	if err := validate(id); err != nil {
		return err
	}
	if s.ids != nil && !s.ids.MatchString(id) {
		s.log.Debug("counter ID refused by COUNTER_ID_PATTERN", "counter", id, "pattern", s.cfg.CounterIDPattern)
		return &wire.FieldError{Field: "counter",
			Message: "counter ID is not one this deployment accepts: it does not match the deployment's COUNTER_ID_PATTERN (its operator sets which IDs are allowed)"}
	}
	return nil
}

// A 503's Retry-After is drawn uniformly from [retryAfterMin, retryAfterMax] seconds.
const retryAfterMin, retryAfterMax = 1, 3

// setRetryAfter sets w's Retry-After and returns it in seconds.
func setRetryAfter(w http.ResponseWriter) string {
	seconds := strconv.Itoa(retryAfterMin + rand.IntN(retryAfterMax-retryAfterMin+1))
	w.Header().Set("Retry-After", seconds)
	return seconds
}

// Outcomes of a failed increment, in the "outcome" field of the answer.
const (
	// outcomeNotApplied: certainly not applied; resending is safe.
	outcomeNotApplied = wire.OutcomeNotApplied
	// outcomeUnknown: maybe applied.
	outcomeUnknown = wire.OutcomeUnknown
)

// declaredNotFound is err, unless err is counter.ErrNotFound for an ID that a declaration of
// COUNTER_SOURCES builds: then the 404 names what makes that counter (its documents, and backfill
// for documents older than the declaration), not ConfigureCounter or increments, which it refuses.
func (s *Service) declaredNotFound(id string, err error) error {
	if !errors.Is(err, counter.ErrNotFound) || !s.counting.Declares(id) {
		return err
	}
	return &requestError{status: http.StatusNotFound, field: "counter",
		message: "no such counter yet: it counts documents (a collection counter, COUNTER_SOURCES), and the first event of one of its documents makes it; " +
			"documents written before its declaration are counted by `go run ./cmd/sources backfill`"}
}

// writeFailure answers a failed request with the status docs/api.md lists; internal details are
// logged, never sent.
func (s *Service) writeFailure(w http.ResponseWriter, r *http.Request, err error) {
	var (
		reqErr   *requestError
		fieldErr *wire.FieldError
	)
	switch {
	case errors.As(err, &reqErr):
		if reqErr.allow != "" {
			w.Header().Set("Allow", reqErr.allow)
		}
		writeJSON(w, reqErr.status, errorBody{Error: reqErr.message, Field: reqErr.field, Outcome: reqErr.outcome})
	case errors.As(err, &fieldErr):
		writeJSON(w, http.StatusBadRequest, errorBody{Error: fieldErr.Message, Field: fieldErr.Field})
	case errors.Is(err, counter.ErrMemberRequired):
		writeJSON(w, http.StatusBadRequest, errorBody{Field: "member",
			Error: "the counter counts distinct members: send {\"counter\", \"member\"} without delta; nothing was counted"})
	case errors.Is(err, counter.ErrNotDistinct):
		writeJSON(w, http.StatusBadRequest, errorBody{Field: "member",
			Error: "the counter does not count distinct members: configure it with {\"counter\", \"distinct\": true} first, or leave member out; nothing was counted"})
	case errors.Is(err, counter.ErrSourceCounter):
		writeJSON(w, http.StatusConflict, errorBody{Field: "counter",
			Error: "the counter counts documents (a collection counter, COUNTER_SOURCES): write or delete its documents instead; nothing was counted"})
	case errors.Is(err, counter.ErrDeclared):
		writeJSON(w, http.StatusConflict, errorBody{Field: "counter",
			Error: "the counter counts documents (a collection counter, COUNTER_SOURCES): its value is its documents' count or sum, and its windows and group are its declaration's. " +
				"Write or delete its documents instead of creating or resetting it, change windows or group in the declaration, run `go run ./cmd/sources backfill` for documents written before its declaration, " +
				"and `go run ./cmd/sources repair` if it drifted; nothing was changed"})
	case errors.Is(err, counter.ErrNotFound):
		how := "with ConfigureCounter or by incrementing it"
		if !s.cfg.CreateOnIncrement {
			how = "with ConfigureCounter (CREATE_ON_INCREMENT is off: increments do not create counters)"
		}
		writeJSON(w, http.StatusNotFound, errorBody{Error: "no such counter; create it " + how, Field: "counter"})
	case errors.Is(err, counter.ErrOutcomeUnknown):
		// Like Cloud Run's 504 on timeout: unknown outcome.
		s.log.ErrorContext(r.Context(), "increment outcome unknown", "event", EventIncrementOutcomeUnknown, "error", err.Error(), "path", r.URL.Path)
		writeJSON(w, http.StatusGatewayTimeout, errorBody{Outcome: outcomeUnknown,
			Error: "the database did not confirm the increment and it may or may not have been applied; " +
				"retry only with the same " + wire.HeaderIdempotencyKey + " header, which applies it at most once"})
	case errors.Is(err, counter.ErrClosed) || shared.IsRetryable(err):
		s.log.WarnContext(r.Context(), "transient failure", "error", err.Error(), "path", r.URL.Path)
		retryAfter := setRetryAfter(w)
		body := errorBody{Error: "the database is busy or unavailable; retry after " + retryAfter + " s"}
		if errors.Is(err, counter.ErrNotApplied) {
			body = errorBody{Outcome: outcomeNotApplied, Error: "not applied: the database is busy or unavailable, or this instance is stopping; retry after " + retryAfter + " s"}
		}
		writeJSON(w, http.StatusServiceUnavailable, body)
	default:
		s.log.ErrorContext(r.Context(), "request failed", "error", err.Error(), "path", r.URL.Path)
		body := errorBody{Error: "internal error"}
		if errors.Is(err, counter.ErrNotApplied) {
			body.Outcome = outcomeNotApplied
		}
		writeJSON(w, http.StatusInternalServerError, body)
	}
}

// counterParam reads the one counter ID of a query string; check validates it.
func counterParam(r *http.Request, check func(id string) error) (string, error) {
	ids := r.URL.Query()["counter"]
	if len(ids) != 1 {
		return "", &wire.FieldError{Field: "counter", Message: fmt.Sprintf("give exactly one counter query parameter, got %d", len(ids))}
	}
	return ids[0], check(ids[0])
}

// answer is a handler's JSON body; status is its HTTP status.
type answer interface{ status() int }

// serve runs h and writes its answer or failure.
func serve[T answer](s *Service, w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request) (T, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	body, err := h(w, r.WithContext(ctx))
	if err != nil {
		s.writeFailure(w, r, err)
		return
	}
	writeJSON(w, body.status(), body)
}
