package functions

import (
	"context"
	"net/http"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions/eventhttp"
)

// cloudEvent adapts a CloudEvent method to an HTTP handler: 200 on success or an unusable event
// (logged), 500 (redelivery) when the method fails.
func cloudEvent(method func(*Service, context.Context, event.Event) error) func(*Service, http.ResponseWriter, *http.Request) {
	return func(s *Service, w http.ResponseWriter, r *http.Request) {
		fn := func(ctx context.Context, e event.Event) error { return method(s, ctx, e) }
		eventhttp.Handler(fn, s.log).ServeHTTP(w, r)
	}
}
