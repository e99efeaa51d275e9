package functions

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/shardcount/counters/shared/wire"

	"github.com/cloudevents/sdk-go/v2/event"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/shared"
)

// poisonError is a message that can never succeed: it is acknowledged and logged, never retried.
type poisonError struct {
	field  string
	reason string
}

func (e *poisonError) Error() string { return e.reason }

// IncrementFromPubSub is the CloudEvent entry point for counter-increments messages (docs/api.md):
// each is applied exactly once, all or nothing; a transient failure returns an error (redelivery).
func (s *Service) IncrementFromPubSub(ctx context.Context, e event.Event) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	var data eventhttp.PushEnvelope
	if err := e.DataAs(&data); err != nil {
		return s.acknowledgePoison(ctx, e.ID(), &poisonError{reason: "the event data is not a Pub/Sub message: " + err.Error()})
	}
	msgID := cmp.Or(data.Message.MessageID, e.ID())
	key, incs, err := s.parseIncrementMessage(data)
	if err != nil {
		return s.acknowledgePoison(ctx, msgID, err)
	}
	out, err := s.increments.Increment(ctx, counter.Request{Key: &key, At: cmp.Or(data.Message.PublishTime, e.Time()), Batch: incs})
	switch {
	case errors.Is(err, counter.ErrKeyReused):
		return s.acknowledgePoison(ctx, msgID, &poisonError{field: wire.AttributeIdempotencyKey,
			reason: fmt.Sprintf("idempotency key %q was already used for other increments; these are not applied", key.ID)})
	case errors.Is(err, counter.ErrNotFound):
		return s.acknowledgePoison(ctx, msgID, &poisonError{field: "counter",
			reason: "a counter of the message does not exist and CREATE_ON_INCREMENT is off; create it with ConfigureCounter: " + err.Error()})
	case errors.Is(err, counter.ErrSourceCounter):
		return s.acknowledgePoison(ctx, msgID, &poisonError{field: "counter",
			reason: "a counter of the message counts documents (COUNTER_SOURCES); only its documents change it: " + err.Error()})
	case errors.Is(err, counter.ErrMemberRequired):
		return s.acknowledgePoison(ctx, msgID, &poisonError{field: "member",
			reason: "a counter of the message counts distinct members, which messages cannot carry; these are not applied: " + err.Error()})
	case status.Code(err) == codes.InvalidArgument:
		return s.acknowledgePoison(ctx, msgID, &poisonError{reason: "the database refuses the increments: " + err.Error()})
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
		return key, nil, &poisonError{reason: "the message has no message ID and no " + wire.AttributeIdempotencyKey + " attribute"}
	}
	incs, err := wire.ParseIncrementMessageOf(data.Message.Data, s.cfg.MaxDelta, s.checkIncrementedCounterID)
	return key, incs, err
}

// acknowledgePoison logs a poison message at ERROR and acknowledges it (nil).
func (s *Service) acknowledgePoison(ctx context.Context, msgID string, err error) error {
	reason, field := err.Error(), ""
	var (
		fieldErr  *wire.FieldError
		poisonErr *poisonError
	)
	switch {
	case errors.As(err, &fieldErr):
		reason, field = fieldErr.Message, fieldErr.Field
	case errors.As(err, &poisonErr):
		field = poisonErr.field
	}
	s.log.ErrorContext(ctx, "poison message acknowledged without applying it",
		"message_id", msgID, "reason", reason, "field", field)
	return nil
}
