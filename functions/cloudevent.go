package functions

import (
	"context"
	"net/http"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/functions/eventhttp"
)

// cloudEvent adapts a CloudEvent method to an HTTP handler that decodes the event in the request's
// own goroutine: binary and structured CloudEvents as Eventarc sends them, and Pub/Sub push
// envelopes. The Functions Framework's own CloudEvent serving (cloudevents/sdk-go's receiver) can
// wedge when senders cancel deliveries (sdk-go issues #1224, #1332). Deployed with an event trigger,
// an HTTP-registered function is served the same way: the framework serves FUNCTION_TARGET at "/" by
// the kind it was registered as, and no code of it reads FUNCTION_SIGNATURE_TYPE.
//
// Answers keep the CloudEvent semantics: 200 acknowledges, 500 (the method failed) asks for
// redelivery, and a delivery that is no usable CloudEvent is acknowledged and logged at ERROR.
func cloudEvent(method func(*Service, context.Context, event.Event) error) func(*Service, http.ResponseWriter, *http.Request) {
	return func(s *Service, w http.ResponseWriter, r *http.Request) {
		fn := func(ctx context.Context, e event.Event) error { return method(s, ctx, e) }
		eventhttp.Handler(fn, s.log).ServeHTTP(w, r)
	}
}
