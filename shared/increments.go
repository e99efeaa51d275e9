package shared

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/shardcount/counters/shared/wire"
)

// Limits and names of keyed and batched increments.
const (
	// MaxBatchIncrements is the most increments one Pub/Sub message may carry. They are applied in one
	// atomic write together with the message's dedupe record (one shard write per distinct counter),
	// which keeps that write far inside Firestore's request limits even with 1,500-byte counter IDs.
	MaxBatchIncrements = 100
	// MaxIdempotencyKeyBytes bounds an idempotency key; it is also Pub/Sub's limit on an attribute value.
	MaxIdempotencyKeyBytes = 1024
	// AttributeIdempotencyKey is the Pub/Sub message attribute that, when present, is the dedupe key of
	// the message instead of its message ID: publishers that retry a publish send the same key again.
	AttributeIdempotencyKey = "idempotency_key"
	// HeaderIdempotencyKey is the HTTP request header that makes an Increment request idempotent.
	HeaderIdempotencyKey = wire.HeaderIdempotencyKey
)

// Increment is one change of one counter.
type Increment struct {
	// Counter is the counter ID.
	Counter string `json:"counter"`
	// Delta is added to the counter; it is never 0.
	Delta int64 `json:"delta"`
}

// incrementItem is one increment as JSON: a missing or null delta means 1.
type incrementItem struct {
	Counter string `json:"counter"`
	Delta   *int64 `json:"delta"`
}

// incrementMessage is the JSON data of a message on TopicIncrements: either one increment
// ({"counter", "delta"}) or a batch ({"increments": [...]}), never both.
type incrementMessage struct {
	Counter    *string         `json:"counter"`
	Delta      *int64          `json:"delta"`
	Increments []incrementItem `json:"increments"`
}

// ParseIncrementMessage decodes and validates the data of a message on TopicIncrements: one increment
// {"counter": "<id>", "delta": <int, default 1>}, or a batch {"increments": [<increment>, ...]} of 1
// to MaxBatchIncrements increments. Every delta is non-zero and at most maxDelta in magnitude. Any
// failure is a *FieldError naming the field (for example "increments[3].delta"); a message that fails
// can never succeed.
func ParseIncrementMessage(data []byte, maxDelta int64) ([]Increment, error) {
	return ParseIncrementMessageOf(data, maxDelta, ValidateCounterID)
}

// ParseIncrementMessageOf is ParseIncrementMessage with checkID in place of ValidateCounterID (a
// deployment's own ID rules on top of it); a *FieldError of checkID is reported for the increment's
// counter field.
func ParseIncrementMessageOf(data []byte, maxDelta int64, checkID func(id string) error) ([]Increment, error) {
	var msg incrementMessage
	if err := DecodeJSONObject(data, &msg, "the message data"); err != nil {
		return nil, err
	}
	var items []incrementItem
	prefix := func(int) string { return "" }
	switch {
	case msg.Increments != nil && (msg.Counter != nil || msg.Delta != nil):
		return nil, &FieldError{Field: "increments", Message: "send either one increment (counter, delta) or a batch (increments), not both"}
	case msg.Increments != nil:
		if len(msg.Increments) == 0 || len(msg.Increments) > MaxBatchIncrements {
			return nil, &FieldError{Field: "increments", Message: fmt.Sprintf("a batch holds 1 to %d increments, got %d", MaxBatchIncrements, len(msg.Increments))}
		}
		items = msg.Increments
		prefix = func(i int) string { return fmt.Sprintf("increments[%d].", i) }
	default:
		var id string
		if msg.Counter != nil {
			id = *msg.Counter
		}
		items = []incrementItem{{Counter: id, Delta: msg.Delta}}
	}
	incs := make([]Increment, len(items))
	for i, item := range items {
		inc := Increment{Counter: item.Counter, Delta: 1}
		if item.Delta != nil {
			inc.Delta = *item.Delta
		}
		err := checkID(inc.Counter)
		if err == nil {
			err = ValidateDelta(inc.Delta, maxDelta)
		}
		if err != nil {
			if fe, ok := err.(*FieldError); ok {
				return nil, &FieldError{Field: prefix(i) + fe.Field, Message: fe.Message}
			}
			return nil, err
		}
		incs[i] = inc
	}
	return incs, nil
}

// EncodeIncrementMessage is the message data for incs, as ParseIncrementMessage reads it: one
// increment as {"counter", "delta"}, several as {"increments": [...]}.
func EncodeIncrementMessage(incs []Increment) ([]byte, error) {
	if len(incs) == 0 || len(incs) > MaxBatchIncrements {
		return nil, &FieldError{Field: "increments", Message: fmt.Sprintf("a message holds 1 to %d increments, got %d", MaxBatchIncrements, len(incs))}
	}
	if len(incs) == 1 {
		return json.Marshal(incs[0])
	}
	return json.Marshal(struct {
		Increments []Increment `json:"increments"`
	}{incs})
}

// ValidateIncrement accepts a valid counter ID and a non-zero delta of magnitude at most maxDelta.
func ValidateIncrement(inc Increment, maxDelta int64) error {
	if err := ValidateCounterID(inc.Counter); err != nil {
		return err
	}
	return ValidateDelta(inc.Delta, maxDelta)
}

// ValidateIdempotencyKey accepts a non-empty UTF-8 key of at most MaxIdempotencyKeyBytes bytes. field
// names where the key came from (the attribute or the header).
func ValidateIdempotencyKey(key, field string) error {
	switch {
	case key == "":
		return &FieldError{Field: field, Message: field + " must not be empty"}
	case len(key) > MaxIdempotencyKeyBytes:
		return &FieldError{Field: field, Message: fmt.Sprintf("%s is %d bytes; at most %d are allowed", field, len(key), MaxIdempotencyKeyBytes)}
	case !utf8.ValidString(key):
		return &FieldError{Field: field, Message: field + " must be valid UTF-8"}
	}
	return nil
}
