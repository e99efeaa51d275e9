package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/callerauth"
	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/logtally"
	"github.com/shardcount/counters/rollup"
	"github.com/shardcount/counters/shared/wire"
	"github.com/shardcount/counters/sources"
)

// Service is every entry point over one set of dependencies.
type Service struct {
	cfg        config.Config
	increments *counter.Increments
	lifecycle  *counter.Lifecycle
	members    *counter.Members
	reader     *counter.Reader
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
		DefaultNumShards:    cfg.DefaultNumShards,
		ShardCountCacheTTL:  cfg.ShardCountCacheTTL,
		GroupCommitInterval: cfg.GroupCommitInterval,
		DedupeTTL:           cfg.DedupeTTL,
		RequireExisting:     !cfg.CreateOnIncrement,
		HourBucketsKept:     cfg.HourBucketsKept,
	})
	origins := map[string]bool{}
	for _, o := range cfg.Origins() {
		origins[o] = true
	}
	applied, refused, unverified, written := newTallies(log)
	s := &Service{
		origins:    origins,
		cfg:        cfg,
		increments: counters.Increments,
		lifecycle:  counters.Lifecycle,
		members:    counters.Members,
		reader:     counters.Reader,
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
	s.counting = sources.NewCounting(&sources.Set{}, counters, client, log, cfg.ChangeCommitInterval)
	s.engine.OnWrite(s.logRollupWritten)
	return s
}

// CountSources makes s keep the collection counters of set (CountDocumentWrite).
func (s *Service) CountSources(set *sources.Set) {
	set.InheritCounterIDPattern(s.ids)
	s.counting = s.counting.Of(set)
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
		s.answerError(w, r, err)
		return
	}
	writeJSON(w, body.status(), body)
}
