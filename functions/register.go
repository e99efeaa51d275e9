package functions

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"sync"

	ff "github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/shardcount/counters/shared"
)

// HTTPEntryPoints lists the HTTP-triggered entry points.
var HTTPEntryPoints = []string{EntryIncrement, EntryCount, EntryConfigureCounter}

// EntryPoints lists every registered entry point.
var EntryPoints = HTTPEntryPoints

// init only registers: every deployed function runs every init, so clients are made on first use.
func init() {
	ff.HTTP(EntryIncrement, lazyHTTP((*Service).Increment))
	ff.HTTP(EntryCount, lazyHTTP((*Service).Count))
	ff.HTTP(EntryConfigureCounter, lazyHTTP((*Service).ConfigureCounter))
}

// instance is this process's Service, built on first use from the environment.
var instance = sync.OnceValues(func() (*Service, error) {
	cfg, err := shared.LoadConfig()
	if err != nil {
		return nil, err
	}
	level, _ := shared.ParseLogLevel(cfg.LogLevel) // validated by LoadConfig
	log := shared.NewLogger(os.Stdout, level)
	client, err := shared.NewFirestoreClient(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	return NewService(cfg, client, log), nil
})

// startupLog reports failures to build the Service, which has no logger of its own then.
var startupLog = shared.NewLogger(os.Stderr, slog.LevelInfo)

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
