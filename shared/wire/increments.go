package wire

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Limits and names of keyed and batched increments.
const (
	// MaxBatchIncrements is the most increments one Pub/Sub message may carry.
	MaxBatchIncrements = 100
	// MaxIdempotencyKeyBytes is Pub/Sub's limit on an attribute value.
	MaxIdempotencyKeyBytes = 1024
	// AttributeIdempotencyKey, when set, is a message's dedupe key instead of its ID.
	AttributeIdempotencyKey = "idempotency_key"
)

// Increment is one change of one counter; Delta is never 0.
type Increment struct {
	Counter string `json:"counter"`
	Delta   int64  `json:"delta"`
}

type incrementItem struct {
	Counter string `json:"counter"`
	Delta   *int64 `json:"delta"`
}

type incrementMessage struct {
	Counter    *string         `json:"counter"`
	Delta      *int64          `json:"delta"`
	Increments []incrementItem `json:"increments"`
}

// ParseIncrementMessage decodes a TopicIncrements message: {"counter", "delta" (default 1)} or
// {"increments": [...]} of 1 to MaxBatchIncrements, each |delta| in 1..maxDelta. Errors are
// *FieldError ("increments[3].delta"): such a message never succeeds.
func ParseIncrementMessage(data []byte, maxDelta int64) ([]Increment, error) {
	return ParseIncrementMessageOf(data, maxDelta, ValidateCounterID)
}

// ParseIncrementMessageOf is ParseIncrementMessage with checkID in place of ValidateCounterID.
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

// EncodeIncrementMessage is the message data of incs, as ParseIncrementMessage reads it.
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

// ValidateIncrement accepts a valid counter ID and |delta| in 1..maxDelta.
func ValidateIncrement(inc Increment, maxDelta int64) error {
	if err := ValidateCounterID(inc.Counter); err != nil {
		return err
	}
	return ValidateDelta(inc.Delta, maxDelta)
}

// ValidateIdempotencyKey accepts non-empty UTF-8 of at most MaxIdempotencyKeyBytes; field names
// the key's source.
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
