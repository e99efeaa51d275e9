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

// Entry-point names, as registered and deployed (--entry-point).
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

// ExtensionShardsPattern is the documents that trigger FoldExtensionShards: firestore-counter
// extension shards at any depth (docs/migrate-from-firestore-counter.md).
const ExtensionShardsPattern = "{collection}/{doc=**}/" + extshards.ShardsCollection + "/{shard}"

// served are the entry points as served, by name; ConfigureCounter never answers browsers.
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

// EntryPoint returns s's entry point name as deployed functions serve it (with CORS).
func (s *Service) EntryPoint(name string) (http.HandlerFunc, bool) {
	method, ok := served[name]
	if !ok {
		return nil, false
	}
	return func(w http.ResponseWriter, r *http.Request) { method(s, w, r) }, true
}

// handlers are the registered handlers by name, on this process's Service.
var handlers = func() map[string]http.HandlerFunc {
	m := make(map[string]http.HandlerFunc, len(served))
	for name, method := range served {
		m[name] = lazyHTTP(method)
	}
	return m
}()

// Handler returns the handler registered as entry point name.
func Handler(name string) (http.HandlerFunc, bool) {
	h, ok := handlers[name]
	return h, ok
}

// init only registers; clients are made on first use.
func init() {
	for name, h := range handlers {
		ff.HTTP(name, h)
	}
}

// firestoreOptions are added to the Firestore client of instance; see UseFirestoreOptions.
var firestoreOptions []option.ClientOption

// UseFirestoreOptions adds options to the Firestore client this process creates on first use; call
// it before serving. Deployed functions never do.
func UseFirestoreOptions(opts ...option.ClientOption) {
	firestoreOptions = append(firestoreOptions, opts...)
}

// instance is this process's Service, built on first use; a transient failure is retried later.
var instance = newStartup(func() (*Service, error) { return newInstance(os.Environ()) })

// newInstance builds the Service from environ (as os.Environ); on Cloud Run it refuses emulator
// switches.
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
	if err == nil {
		err = set.CheckFolds(cfg.ExtensionTargets())
	}
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

// emulatorSwitches lists environ's set *_EMULATOR_HOST variables when K_SERVICE is set; else nil.
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

// startupLog logs the start and Service build failures, at every LOG_LEVEL.
var startupLog = cloudlog.New(os.Stderr, slog.LevelInfo)

// startedInstance is this process's Service; a build failure is logged at CRITICAL.
func startedInstance(ctx context.Context) (*Service, error) {
	s, err := instance.get()
	if err != nil {
		startupLog.Log(ctx, cloudlog.LevelCritical, "function cannot start", "error", err.Error(), "version", version.Version)
	}
	return s, err
}

// lazyHTTP adapts a Service method to a handler that builds the Service on first use and passes the
// graceful-stop gate; a misconfigured function answers 500, a transient start failure 503.
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
