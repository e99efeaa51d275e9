package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"

	"cloud.google.com/go/firestore"

	"github.com/cloudevents/sdk-go/v2/event"

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

// Service is every entry point, each served by a handler holding only what it uses; NewService
// builds them over one set of dependencies.
type Service struct {
	increments *incrementHandler // Increment, IncrementFromPubSub
	reads      *readHandler      // Count, Top
	configure  *configureHandler // ConfigureCounter
	rollups    *rollupHandler    // RollupOnShardWrite, RollupScheduled
	folds      *foldHandler      // FoldExtensionShards
	documents  *documentHandler  // CountDocumentWrite
	log        *slog.Logger
	origins    map[string]bool // ALLOWED_ORIGINS
}

// answerer is what the handlers that answer requests share: the settings, the log, and the
// counter IDs COUNTER_ID_PATTERN accepts.
type answerer struct {
	cfg config.Config
	log *slog.Logger
	ids *regexp.Regexp // COUNTER_ID_PATTERN, anchored; nil: any valid ID
}

// incrementHandler serves Increment and IncrementFromPubSub.
type incrementHandler struct {
	answerer
	increments *counter.Increments
	counting   *sources.Counting    // which counter IDs are collection counters'
	callers    *callerauth.Verifier // nil: callers are not verified
	applied    *logtally.Tally      // increments applied, per source (EventIncrementsApplied)
	refused    *logtally.Tally      // increments refused, per reason (EventIncrementsRefused)
	unverified *logtally.Tally      // tokens the platform could not verify, per kind (EventTokensUnverified)
}

// readHandler serves Count and Top.
type readHandler struct {
	answerer
	reader   *counter.Reader
	rollups  *rollup.Store
	counting *sources.Counting // which counter IDs are collection counters'

	betweenCountReads func(id string) // tests: runs between Count's read of the roll-up and of the exact value
}

// configureHandler serves ConfigureCounter.
type configureHandler struct {
	answerer
	lifecycle *counter.Lifecycle
	members   *counter.Members
	reader    *counter.Reader
	rollups   *rollup.Store
	engine    *rollup.Engine    // refreshes the top lists of a deleted counter
	counting  *sources.Counting // which counter IDs are collection counters'
}

// rollupHandler serves RollupOnShardWrite and RollupScheduled, with the canary, the collection
// triggers' probes and the drift check of the scheduled tick.
type rollupHandler struct {
	cfg        config.Config
	log        *slog.Logger
	engine     *rollup.Engine
	increments *counter.Increments // the canary's bump
	lifecycle  *counter.Lifecycle  // creates the canary
	reader     *counter.Reader
	rollups    *rollup.Store
	counting   *sources.Counting
	written    *logtally.Tally // roll-ups written, per source (EventRollupWritten)
}

// foldHandler serves FoldExtensionShards.
type foldHandler struct {
	log    *slog.Logger
	folder *extshards.Folder
}

// documentHandler serves CountDocumentWrite.
type documentHandler struct {
	log      *slog.Logger
	counting *sources.Counting
	schema   shared.Schema // where the collection triggers' probe records are (canaryRecords)
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
	answers := answerer{cfg: cfg, log: log, ids: cfg.CounterIDs()}
	rollups := rollup.NewStore(client, cfg.Schema())
	engine := rollup.NewEngine(client, cfg.Schema(), counters, cfg.RollupInterval)
	counting := sources.NewCounting(&sources.Set{}, counters, client, log, cfg.ChangeCommitInterval)
	s := &Service{
		increments: &incrementHandler{answerer: answers, increments: counters.Increments, counting: counting,
			applied: applied, refused: refused, unverified: unverified},
		reads: &readHandler{answerer: answers, reader: counters.Reader, rollups: rollups, counting: counting},
		configure: &configureHandler{answerer: answers, lifecycle: counters.Lifecycle, members: counters.Members,
			reader: counters.Reader, rollups: rollups, engine: engine, counting: counting},
		rollups: &rollupHandler{cfg: cfg, log: log, engine: engine, increments: counters.Increments, lifecycle: counters.Lifecycle,
			reader: counters.Reader, rollups: rollups, counting: counting, written: written},
		folds:     &foldHandler{log: log, folder: extshards.NewFolder(client, cfg.ExtensionFoldInterval, cfg.ExtensionTargets())},
		documents: &documentHandler{log: log, counting: counting, schema: cfg.Schema()},
		log:       log,
		origins:   origins,
	}
	engine.OnWrite(s.rollups.logRollupWritten)
	return s
}

// CountSources makes s keep the collection counters of set (CountDocumentWrite).
func (s *Service) CountSources(set *sources.Set) {
	set.InheritCounterIDPattern(s.increments.ids)
	counting := s.documents.counting.Of(set)
	s.increments.counting, s.reads.counting, s.configure.counting = counting, counting, counting
	s.rollups.counting, s.documents.counting = counting, counting
}

// Increment is incrementHandler.Increment, the entry point.
func (s *Service) Increment(w http.ResponseWriter, r *http.Request) { s.increments.Increment(w, r) }

// IncrementFromPubSub is incrementHandler.IncrementFromPubSub, the entry point.
func (s *Service) IncrementFromPubSub(ctx context.Context, e event.Event) error {
	return s.increments.IncrementFromPubSub(ctx, e)
}

// Count is readHandler.Count, the entry point.
func (s *Service) Count(w http.ResponseWriter, r *http.Request) { s.reads.Count(w, r) }

// Top is readHandler.Top, the entry point.
func (s *Service) Top(w http.ResponseWriter, r *http.Request) { s.reads.Top(w, r) }

// ConfigureCounter is configureHandler.ConfigureCounter, the entry point.
func (s *Service) ConfigureCounter(w http.ResponseWriter, r *http.Request) {
	s.configure.ConfigureCounter(w, r)
}

// RollupOnShardWrite is rollupHandler.RollupOnShardWrite, the entry point.
func (s *Service) RollupOnShardWrite(ctx context.Context, e event.Event) error {
	return s.rollups.RollupOnShardWrite(ctx, e)
}

// RollupScheduled is rollupHandler.RollupScheduled, the entry point.
func (s *Service) RollupScheduled(ctx context.Context, e event.Event) error {
	return s.rollups.RollupScheduled(ctx, e)
}

// FoldExtensionShards is foldHandler.FoldExtensionShards, the entry point.
func (s *Service) FoldExtensionShards(ctx context.Context, e event.Event) error {
	return s.folds.FoldExtensionShards(ctx, e)
}

// CountDocumentWrite is documentHandler.CountDocumentWrite, the entry point.
func (s *Service) CountDocumentWrite(ctx context.Context, e event.Event) error {
	return s.documents.CountDocumentWrite(ctx, e)
}

// checkCounterID accepts a valid document ID matching COUNTER_ID_PATTERN, else returns a
// *wire.FieldError "counter" that never reveals the pattern (logged at DEBUG).
func (a *answerer) checkCounterID(id string) error {
	return a.checkIDWith(id, wire.ValidateCounterID)
}

// checkWritableCounterID is checkCounterID for a counter a caller changes: no reserved ID.
func (a *answerer) checkWritableCounterID(id string) error {
	return a.checkIDWith(id, wire.ValidateWritableCounterID)
}

// checkIDWith is checkCounterID with validate in place of wire.ValidateCounterID.
func (a *answerer) checkIDWith(id string, validate func(string) error) error {
	if err := validate(id); err != nil {
		return err
	}
	if a.ids != nil && !a.ids.MatchString(id) {
		a.log.Debug("counter ID refused by COUNTER_ID_PATTERN", "counter", id, "pattern", a.cfg.CounterIDPattern)
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
// counting builds: then the 404 names what makes that counter (its documents, and backfill for
// documents older than the declaration), not ConfigureCounter or increments, which it refuses.
func declaredNotFound(counting *sources.Counting, id string, err error) error {
	if !errors.Is(err, counter.ErrNotFound) || !counting.Declares(id) {
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

// serve runs h within REQUEST_TIMEOUT and writes its answer or failure.
func serve[T answer](a *answerer, w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request) (T, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.RequestTimeout)
	defer cancel()
	body, err := h(w, r.WithContext(ctx))
	if err != nil {
		a.answerError(w, r, err)
		return
	}
	writeJSON(w, body.status(), body)
}
