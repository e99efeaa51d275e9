package functions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/shardcount/counters/shared/wire"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/shared"
)

// IncrementFromPubSub is the CloudEvent entry point for counter-increments messages (docs/api.md):
// each is applied exactly once, all or nothing; a transient failure returns an error (redelivery).
func (h *incrementHandler) IncrementFromPubSub(ctx context.Context, e event.Event) error {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.RequestTimeout)
	defer cancel()
	var data eventhttp.PushEnvelope
	if err := e.DataAs(&data); err != nil {
		return h.acknowledgePoison(ctx, e.ID(), &wire.FieldError{Message: "the event data is not a Pub/Sub message: " + err.Error()})
	}
	msgID := cmp.Or(data.Message.MessageID, e.ID())
	key, incs, err := h.parseIncrementMessage(data)
	if err != nil {
		return h.acknowledgePoison(ctx, msgID, err)
	}
	out, err := h.increments.Increment(ctx, counter.Request{Key: &key, At: cmp.Or(data.Message.PublishTime, e.Time()), Batch: incs})
	switch {
	case err != nil && h.failureOf(err).status < http.StatusInternalServerError:
		return h.acknowledgePoison(ctx, msgID, err)
	case err != nil:
		// Redelivery is safe: the dedupe record settles it.
		h.log.WarnContext(ctx, "increments not confirmed; Pub/Sub will redeliver the message",
			"message_id", msgID, "error", err.Error(), "retryable", shared.IsRetryable(err),
			"outcome_unknown", errors.Is(err, counter.ErrOutcomeUnknown))
		return fmt.Errorf("message %s: %w", msgID, err)
	case out.Duplicate:
		h.log.InfoContext(ctx, "duplicate delivery acknowledged; already applied", "message_id", msgID, "key", key.ID)
	default:
		h.log.DebugContext(ctx, "increments applied", "message_id", msgID, "key", key.ID, "counters", len(out.Applied))
		h.countApplied(context.WithoutCancel(ctx), sourcePubSub, out)
	}
	return nil
}

// parseIncrementMessage validates a message: its dedupe key and its increments.
func (h *incrementHandler) parseIncrementMessage(data eventhttp.PushEnvelope) (counter.Key, []wire.Increment, error) {
	key := counter.Key{Source: counter.SourcePubSub, ID: data.Message.MessageID}
	if k, ok := data.Message.Attributes[wire.AttributeIdempotencyKey]; ok {
		if err := wire.ValidateIdempotencyKey(k, wire.AttributeIdempotencyKey); err != nil {
			return key, nil, err
		}
		key.ID = k
	}
	if key.ID == "" {
		return key, nil, &wire.FieldError{Field: wire.AttributeIdempotencyKey, Message: "the message has no message ID and no " + wire.AttributeIdempotencyKey + " attribute"}
	}
	incs, err := wire.ParseIncrementMessageOf(data.Message.Data, h.cfg.MaxDelta, h.checkIncrementedCounterID)
	return key, incs, err
}

// acknowledgePoison logs a message that can never succeed at ERROR, with the reason failureOf
// gives err, and acknowledges it (nil).
func (h *incrementHandler) acknowledgePoison(ctx context.Context, msgID string, err error) error {
	f := h.failureOf(err)
	if f.status >= http.StatusInternalServerError {
		f.body.Error = err.Error() // a malformed event: no answer of the table says more
	}
	h.log.ErrorContext(ctx, "poison message acknowledged without applying it",
		"message_id", msgID, "reason", f.body.Error, "field", f.body.Field)
	return nil
}
