package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions/eventhttp"
)

// serveWriteTime serves g as a CloudEvent function on a free loopback port, decoding each event in
// its request's own goroutine as the functions do (eventhttp), and returns its URL. A failed
// transaction answers 500, so the bridge delivers the event again, as Eventarc does for a function
// deployed with retry.
func serveWriteTime(g *writeTimeAggregation) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	handler := eventhttp.Handler(func(ctx context.Context, e event.Event) error {
		value, old, err := eventhttp.Documents(e.Data())
		if err != nil || !strings.HasPrefix(e.Subject(), "documents/") {
			log.Error("not a document event; dropped", "subject", e.Subject(), "error", err)
			return nil
		}
		return g.handle(ctx, e.ID(), e.Time(), e.Subject(), value, old)
	}, log)
	go func() { _ = http.Serve(l, handler) }()
	return "http://" + l.Addr().String() + "/aggregateLikes", nil
}
