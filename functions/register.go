package functions

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"

	ff "github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"
	"google.golang.org/api/option"

	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/shared"
)

// HTTPEntryPoints lists the HTTP-triggered entry points.
var HTTPEntryPoints = []string{EntryIncrement, EntryCount, EntryConfigureCounter}

// CloudEventEntryPoints lists the CloudEvent-triggered entry points.
var CloudEventEntryPoints = []string{EntryIncrementFromPubSub, EntryRollupOnShardWrite, EntryRollupScheduled}

// EntryPoints lists every registered entry point.
var EntryPoints = slices.Concat(HTTPEntryPoints, CloudEventEntryPoints)

// cloudEventFunctions are the CloudEvent entry points by name.
var cloudEventFunctions = map[string]func(context.Context, event.Event) error{
	EntryIncrementFromPubSub: lazyCloudEvent((*Service).IncrementFromPubSub),
	EntryRollupOnShardWrite:  lazyCloudEvent((*Service).RollupOnShardWrite),
	EntryRollupScheduled:     lazyCloudEvent((*Service).RollupScheduled),
}

// CloudEventFunction returns the function registered as the CloudEvent entry point name, for servers
// that must also serve it at another path (the local stack's Pub/Sub push endpoints).
func CloudEventFunction(name string) (func(context.Context, event.Event) error, bool) {
	fn, ok := cloudEventFunctions[name]
	return fn, ok
}

// init only registers: every deployed function runs every init, so clients are made on first use.
func init() {
	ff.HTTP(EntryIncrement, lazyHTTP((*Service).Increment))
	ff.HTTP(EntryCount, lazyHTTP((*Service).Count))
	ff.HTTP(EntryConfigureCounter, lazyHTTP((*Service).ConfigureCounter))
	for _, name := range CloudEventEntryPoints {
		ff.CloudEvent(name, cloudEventFunctions[name])
	}
}

// instance is this process's Service, built on first use from the environment.
var instance = sync.OnceValues(func() (*Service, error) {
	cfg, err := shared.LoadConfig()
	if err != nil {
		return nil, err
	}
	level, _ := shared.ParseLogLevel(cfg.LogLevel) // validated by LoadConfig
	log := shared.NewLogger(os.Stdout, level)
	var opts []option.ClientOption
	if path := os.Getenv(commitlog.EnvPath); path != "" {
		opt, err := recordCommits(path)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	}
	client, err := shared.NewFirestoreClient(context.Background(), cfg, opts...)
	if err != nil {
		return nil, err
	}
	return NewService(cfg, client, log).requireCallersFromConfig(context.Background())
})

// recordCommits makes the Firestore client append every commit to the file at path (local stack
// only: load reports count what was really written).
func recordCommits(path string) (option.ClientOption, error) {
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	if host == "" {
		return nil, fmt.Errorf("%s is for the local stack: it needs FIRESTORE_EMULATOR_HOST", commitlog.EnvPath)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", commitlog.EnvPath, err)
	}
	return commitlog.NewRecorder(f).EmulatorOption(host)
}

// startupLog reports failures to build the Service, which has no logger of its own then.
var startupLog = shared.NewLogger(os.Stderr, slog.LevelInfo)

// startedInstance is this process's Service; a failure to build it is logged at CRITICAL each time.
func startedInstance(ctx context.Context) (*Service, error) {
	s, err := instance()
	if err != nil {
		startupLog.Log(ctx, shared.LevelCritical, "function cannot start", "error", err.Error())
	}
	return s, err
}

// lazyHTTP adapts a Service method to an http.HandlerFunc that builds the Service on first use.
func lazyHTTP(method func(*Service, http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := startedInstance(r.Context())
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, errorBody{Error: "the function is misconfigured; its logs say how"})
			return
		}
		method(s, w, r)
	}
}

// lazyCloudEvent adapts a Service method to a CloudEvent function that builds the Service on first
// use. A misconfigured function fails the event, so the platform redelivers it once the
// configuration is fixed.
func lazyCloudEvent(method func(*Service, context.Context, event.Event) error) func(context.Context, event.Event) error {
	return func(ctx context.Context, e event.Event) error {
		s, err := startedInstance(ctx)
		if err != nil {
			return fmt.Errorf("function cannot start: %w", err)
		}
		return method(s, ctx, e)
	}
}
