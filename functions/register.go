package functions

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"

	ff "github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"google.golang.org/api/option"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/sources"
	"github.com/shardcount/counters/version"
)

// Entry-point names: the names the functions are registered under, and so each deployment's
// --entry-point.
const (
	EntryIncrement           = "Increment"
	EntryCount               = "Count"
	EntryTop                 = "Top"
	EntryConfigureCounter    = "ConfigureCounter"
	EntryIncrementFromPubSub = "IncrementFromPubSub"
	EntryRollupOnShardWrite  = "RollupOnShardWrite"
	EntryRollupScheduled     = "RollupScheduled"
	EntryFoldExtensionShards = "FoldExtensionShards"
	EntryCountDocumentWrite  = "CountDocumentWrite"
)

// ExtensionShardsPattern is the documents FoldExtensionShards is triggered by: the shards of the
// firestore-counter extension's clients under a document at any depth (the extension's own trigger
// pattern). docs/migrate-from-firestore-counter.md says how to serve other paths.
const ExtensionShardsPattern = "{collection}/{doc=**}/" + extshards.ShardsCollection + "/{shard}"

// served are the entry points as they are served, by name: the HTTP ones that browsers may call
// behind crossOrigin, the CloudEvent ones decoding their event themselves (see cloudEvent).
// ConfigureCounter, the admin function, never answers browsers (docs/api.md, "Browsers (CORS)").
var served = map[string]func(*Service, http.ResponseWriter, *http.Request){
	EntryIncrement:           crossOrigin((*Service).Increment, incrementMethods...),
	EntryCount:               crossOrigin((*Service).Count, countMethods...),
	EntryTop:                 crossOrigin((*Service).Top, topMethods...),
	EntryConfigureCounter:    (*Service).ConfigureCounter,
	EntryIncrementFromPubSub: cloudEvent((*Service).IncrementFromPubSub),
	EntryRollupOnShardWrite:  cloudEvent((*Service).RollupOnShardWrite),
	EntryRollupScheduled:     cloudEvent((*Service).RollupScheduled),
	EntryFoldExtensionShards: cloudEvent((*Service).FoldExtensionShards),
	EntryCountDocumentWrite:  cloudEvent((*Service).CountDocumentWrite),
}

// EntryPoint returns s's entry point name as the deployed functions serve it (for HTTP entry
// points: CORS included), for servers and tests that build their own Service.
func (s *Service) EntryPoint(name string) (http.HandlerFunc, bool) {
	method, ok := served[name]
	if !ok {
		return nil, false
	}
	return func(w http.ResponseWriter, r *http.Request) { method(s, w, r) }, true
}

// handlers are the entry points' handlers by name, as registered: served, on this process's Service.
var handlers = func() map[string]http.HandlerFunc {
	m := make(map[string]http.HandlerFunc, len(served))
	for name, method := range served {
		m[name] = lazyHTTP(method)
	}
	return m
}()

// Handler returns the handler registered as entry point name, for servers that must also serve it at
// another path (the local stack's Pub/Sub push endpoints).
func Handler(name string) (http.HandlerFunc, bool) {
	h, ok := handlers[name]
	return h, ok
}

// init only registers: every deployed function runs every init, so clients are made on first use.
func init() {
	for name, h := range handlers {
		ff.HTTP(name, h)
	}
}

// firestoreOptions are added to the Firestore client of instance; see UseFirestoreOptions.
var firestoreOptions []option.ClientOption

// UseFirestoreOptions adds options to the Firestore client this process's functions create on first
// use. A binary that serves the functions outside Cloud Functions (the local stack, which records
// commits for load reports) calls it before it serves; the deployed functions never do, so nothing
// meant for local use is compiled into them.
func UseFirestoreOptions(opts ...option.ClientOption) {
	firestoreOptions = append(firestoreOptions, opts...)
}

// instance is this process's Service, built on first use from the environment; a transient failure
// is retried by a later request (startup).
var instance = newStartup(func() (*Service, error) { return newInstance(os.Environ()) })

// newInstance builds the Service from the environment (environ lists it, as os.Environ does). On Cloud
// Run it first refuses emulator switches: see emulatorSwitches.
func newInstance(environ []string) (*Service, error) {
	if names := emulatorSwitches(environ); len(names) > 0 {
		return nil, &configError{fmt.Errorf("%s set on Cloud Run (K_SERVICE is set): emulator switches turn off "+
			"checks that production relies on (the Admin SDK accepts unsigned ID tokens with FIREBASE_AUTH_EMULATOR_HOST); "+
			"remove them from the function's environment", strings.Join(names, ", "))}
	}
	cfg, err := config.Load()
	if err != nil {
		return nil, &configError{err}
	}
	set, err := sources.Load(cfg.CounterSources, cfg.Schema())
	if err != nil {
		return nil, &configError{err}
	}
	level, _ := cloudlog.ParseLevel(cfg.LogLevel) // validated by Load
	log := cloudlog.New(os.Stdout, level)
	client, err := newFirestoreClient(context.Background(), cfg.Project, cfg.Database, firestoreOptions...)
	if err != nil {
		return nil, err
	}
	s := NewService(cfg, client, log)
	s.CountSources(set)
	if err := s.requireCallersFromConfig(context.Background()); err != nil {
		_ = client.Close()
		return nil, err
	}
	stopOnSIGTERM(s)
	logStarted(context.Background(), startupLog) // whatever LOG_LEVEL says
	return s, nil
}

// emulatorSwitches lists the variables of environ named *_EMULATOR_HOST with a value, when K_SERVICE
// (set by Cloud Run, so in every deployed function) is set too; nil elsewhere (the local stack and the
// tests run against emulators on purpose).
func emulatorSwitches(environ []string) []string {
	vars := map[string]string{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		vars[name] = value
	}
	if vars["K_SERVICE"] == "" {
		return nil
	}
	var names []string
	for name, value := range vars {
		if strings.HasSuffix(name, "_EMULATOR_HOST") && value != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// startupLog reports the start (logStarted) and failures to build the Service, which has no logger of
// its own then, at every LOG_LEVEL.
var startupLog = cloudlog.New(os.Stderr, slog.LevelInfo)

// startedInstance is this process's Service; a failure to build it is logged at CRITICAL each time.
func startedInstance(ctx context.Context) (*Service, error) {
	s, err := instance.get()
	if err != nil {
		startupLog.Log(ctx, cloudlog.LevelCritical, "function cannot start", "error", err.Error(), "version", version.Version)
	}
	return s, err
}

// lazyHTTP adapts a Service method to an http.HandlerFunc that builds the Service on first use and
// passes through the gate of the graceful stop. A misconfigured function answers 500 and one that
// failed to start for a transient reason 503; events are redelivered either way.
func lazyHTTP(method func(*Service, http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return gated(func(w http.ResponseWriter, r *http.Request) {
		s, err := startedInstance(r.Context())
		switch {
		case isConfigError(err):
			writeJSON(w, http.StatusInternalServerError, errorBody{Error: "the function is misconfigured; its logs say how"})
			return
		case err != nil:
			retryAfter := setRetryAfter(w)
			writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "the function could not start; nothing was done; retry after " + retryAfter + " s", Outcome: outcomeNotApplied})
			return
		}
		method(s, w, r)
	})
}
