package publisher

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardcount/counters/shared/wire"
)

func TestMessageRoundTripsThroughTheFunctionsParser(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		incs     []wire.Increment
		wantData string
	}{
		{"one increment", "", []wire.Increment{{Counter: "likes", Delta: 1}}, `{"counter":"likes","delta":1}`},
		{"keyed", "order-42", []wire.Increment{{Counter: "likes", Delta: -3}}, `{"counter":"likes","delta":-3}`},
		{"batch", "b", []wire.Increment{{Counter: "a", Delta: 1}, {Counter: "b", Delta: 2}},
			`{"increments":[{"counter":"a","delta":1},{"counter":"b","delta":2}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := Message(tt.key, tt.incs...)
			if err != nil {
				t.Fatal(err)
			}
			if string(msg.Data) != tt.wantData {
				t.Errorf("data %s, want %s", msg.Data, tt.wantData)
			}
			if got := msg.Attributes[wire.AttributeIdempotencyKey]; got != tt.key {
				t.Errorf("idempotency_key %q, want %q", got, tt.key)
			}
			parsed, err := wire.ParseIncrementMessage(msg.Data, wire.MaxDeltaLimit)
			if err != nil || fmt.Sprint(parsed) != fmt.Sprint(tt.incs) {
				t.Errorf("the function reads %v, %v; want %v", parsed, err, tt.incs)
			}
		})
	}
}

func TestMessageRefusesWhatTheFunctionWouldDrop(t *testing.T) {
	tooMany := make([]wire.Increment, wire.MaxBatchIncrements+1)
	for i := range tooMany {
		tooMany[i] = wire.Increment{Counter: "a", Delta: 1}
	}
	tests := []struct {
		name string
		key  string
		incs []wire.Increment
	}{
		{"no increments", "", nil},
		{"too many increments", "", tooMany},
		{"invalid counter", "", []wire.Increment{{Counter: "a/b", Delta: 1}}},
		{"zero delta", "", []wire.Increment{{Counter: "a", Delta: 0}}},
		{"key too long", strings.Repeat("k", wire.MaxIdempotencyKeyBytes+1), []wire.Increment{{Counter: "a", Delta: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if msg, err := Message(tt.key, tt.incs...); err == nil {
				t.Errorf("Message = %s, want an error", msg.Data)
			}
		})
	}
}

func TestNewKeyIsRandomAndValid(t *testing.T) {
	a, b := NewKey(), NewKey()
	if a == b || wire.ValidateIdempotencyKey(a, wire.AttributeIdempotencyKey) != nil {
		t.Errorf("NewKey gave %q and %q", a, b)
	}
}
