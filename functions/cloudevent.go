package functions

import (
	"context"
	"net/http"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions/eventhttp"
)

// cloudEvent adapts a CloudEvent method to an HTTP handler that decodes the event in the request's
// own goroutine (package eventhttp). It answers 200 when the method succeeds or the delivery is no
// usable CloudEvent (logged at ERROR), and 500, asking for redelivery, when the method fails.
func cloudEvent(method func(*Service, context.Context, event.Event) error) func(*Service, http.ResponseWriter, *http.Request) {
	return func(s *Service, w http.ResponseWriter, r *http.Request) {
		fn := func(ctx context.Context, e event.Event) error { return method(s, ctx, e) }
		eventhttp.Handler(fn, s.log).ServeHTTP(w, r)
	}
}
