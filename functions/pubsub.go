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
func (s *Service) IncrementFromPubSub(ctx context.Context, e event.Event) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	var data eventhttp.PushEnvelope
	if err := e.DataAs(&data); err != nil {
		return s.acknowledgePoison(ctx, e.ID(), &wire.FieldError{Message: "the event data is not a Pub/Sub message: " + err.Error()})
	}
	msgID := cmp.Or(data.Message.MessageID, e.ID())
	key, incs, err := s.parseIncrementMessage(data)
	if err != nil {
		return s.acknowledgePoison(ctx, msgID, err)
	}
	out, err := s.increments.Increment(ctx, counter.Request{Key: &key, At: cmp.Or(data.Message.PublishTime, e.Time()), Batch: incs})
	switch {
	case err != nil && s.failureOf(err).status < http.StatusInternalServerError:
		return s.acknowledgePoison(ctx, msgID, err)
	case err != nil:
		// Redelivery is safe: the dedupe record settles it.
		s.log.WarnContext(ctx, "increments not confirmed; Pub/Sub will redeliver the message",
			"message_id", msgID, "error", err.Error(), "retryable", shared.IsRetryable(err),
			"outcome_unknown", errors.Is(err, counter.ErrOutcomeUnknown))
		return fmt.Errorf("message %s: %w", msgID, err)
	case out.Duplicate:
		s.log.InfoContext(ctx, "duplicate delivery acknowledged; already applied", "message_id", msgID, "key", key.ID)
	default:
		s.log.DebugContext(ctx, "increments applied", "message_id", msgID, "key", key.ID, "counters", len(out.Applied))
		s.countApplied(context.WithoutCancel(ctx), sourcePubSub, out)
	}
	return nil
}

// parseIncrementMessage validates a message: its dedupe key and its increments.
func (s *Service) parseIncrementMessage(data eventhttp.PushEnvelope) (counter.Key, []wire.Increment, error) {
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
	incs, err := wire.ParseIncrementMessageOf(data.Message.Data, s.cfg.MaxDelta, s.checkIncrementedCounterID)
	return key, incs, err
}

// acknowledgePoison logs a message that can never succeed at ERROR, with the reason failureOf
// gives err, and acknowledges it (nil).
func (s *Service) acknowledgePoison(ctx context.Context, msgID string, err error) error {
	f := s.failureOf(err)
	if f.status >= http.StatusInternalServerError {
		f.body.Error = err.Error() // a malformed event: no answer of the table says more
	}
	s.log.ErrorContext(ctx, "poison message acknowledged without applying it",
		"message_id", msgID, "reason", f.body.Error, "field", f.body.Field)
	return nil
}
