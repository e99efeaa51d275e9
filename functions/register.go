package functions

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"

	ff "github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"
	"google.golang.org/api/option"

	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/shared"
)

// EntryPoints lists every registered entry point.
var EntryPoints = []string{
	EntryIncrement, EntryCount, EntryConfigureCounter,
	EntryRollupOnShardWrite, EntryRollupScheduled,
}

// init only registers: every deployed function runs every init, so clients are made on first use.
func init() {
	ff.HTTP(EntryIncrement, lazyHTTP((*Service).Increment))
	ff.HTTP(EntryCount, lazyHTTP((*Service).Count))
	ff.HTTP(EntryConfigureCounter, lazyHTTP((*Service).ConfigureCounter))
	ff.CloudEvent(EntryRollupOnShardWrite, CloudEventFunctions[EntryRollupOnShardWrite])
	ff.CloudEvent(EntryRollupScheduled, CloudEventFunctions[EntryRollupScheduled])
}

// CloudEventFunctions are the CloudEvent entry points by name, each building the Service on first use.
// The local stack also serves them below /<name>/ so that Pub/Sub pushes can name their topic.
var CloudEventFunctions = map[string]func(context.Context, event.Event) error{
	EntryRollupOnShardWrite: lazyCloudEvent((*Service).RollupOnShardWrite),
	EntryRollupScheduled:    lazyCloudEvent((*Service).RollupScheduled),
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
	return NewService(cfg, client, log), nil
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

// lazyCloudEvent adapts a Service method to a CloudEvent function that builds the Service on first
// use. A Service that cannot be built fails every event, so the platform keeps it for redelivery
// once the configuration is fixed.
func lazyCloudEvent(method func(*Service, context.Context, event.Event) error) func(context.Context, event.Event) error {
	return func(ctx context.Context, e event.Event) error {
		s, err := instance()
		if err != nil {
			startupLog.Log(ctx, shared.LevelCritical, "function cannot start", "error", err.Error())
			return fmt.Errorf("function cannot start: %w", err)
		}
		return method(s, ctx, e)
	}
}

// lazyHTTP adapts a Service method to an http.HandlerFunc that builds the Service on first use.
func lazyHTTP(method func(*Service, http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := instance()
		if err != nil {
			startupLog.Log(r.Context(), shared.LevelCritical, "function cannot start", "error", err.Error())
			writeJSON(w, http.StatusInternalServerError, errorBody{Error: "the function is misconfigured; its logs say how"})
			return
		}
		method(s, w, r)
	}
}
