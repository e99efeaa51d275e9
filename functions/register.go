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

// firestoreOptions are added to the Firestore client of instance; see UseFirestoreOptions.
var firestoreOptions []option.ClientOption

// UseFirestoreOptions adds options to the Firestore client this process's functions create on first
// use. A binary that serves the functions outside Cloud Functions (the local stack, which records
// commits for load reports) calls it before it serves; the deployed functions never do, so nothing
// meant for local use is compiled into them.
func UseFirestoreOptions(opts ...option.ClientOption) {
	firestoreOptions = append(firestoreOptions, opts...)
}

// instance is this process's Service, built on first use from the environment.
var instance = sync.OnceValues(func() (*Service, error) {
	cfg, err := shared.LoadConfig()
	if err != nil {
		return nil, err
	}
	level, _ := shared.ParseLogLevel(cfg.LogLevel) // validated by LoadConfig
	log := shared.NewLogger(os.Stdout, level)
	client, err := shared.NewFirestoreClient(context.Background(), cfg, firestoreOptions...)
	if err != nil {
		return nil, err
	}
	return NewService(cfg, client, log), nil
})

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
