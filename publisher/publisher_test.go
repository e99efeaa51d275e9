package publisher

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardcount/counters/shared"
)

func TestMessageRoundTripsThroughTheFunctionsParser(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		incs     []shared.Increment
		wantData string
	}{
		{"one increment", "", []shared.Increment{{Counter: "likes", Delta: 1}}, `{"counter":"likes","delta":1}`},
		{"keyed", "order-42", []shared.Increment{{Counter: "likes", Delta: -3}}, `{"counter":"likes","delta":-3}`},
		{"batch", "b", []shared.Increment{{Counter: "a", Delta: 1}, {Counter: "b", Delta: 2}},
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
			if got := msg.Attributes[shared.AttributeIdempotencyKey]; got != tt.key {
				t.Errorf("idempotency_key %q, want %q", got, tt.key)
			}
			parsed, err := shared.ParseIncrementMessage(msg.Data, shared.MaxDeltaLimit)
			if err != nil || fmt.Sprint(parsed) != fmt.Sprint(tt.incs) {
				t.Errorf("the function reads %v, %v; want %v", parsed, err, tt.incs)
			}
		})
	}
}

func TestMessageRefusesWhatTheFunctionWouldDrop(t *testing.T) {
	tooMany := make([]shared.Increment, shared.MaxBatchIncrements+1)
	for i := range tooMany {
		tooMany[i] = shared.Increment{Counter: "a", Delta: 1}
	}
	tests := []struct {
		name string
		key  string
		incs []shared.Increment
	}{
		{"no increments", "", nil},
		{"too many increments", "", tooMany},
		{"invalid counter", "", []shared.Increment{{Counter: "a/b", Delta: 1}}},
		{"zero delta", "", []shared.Increment{{Counter: "a", Delta: 0}}},
		{"key too long", strings.Repeat("k", shared.MaxIdempotencyKeyBytes+1), []shared.Increment{{Counter: "a", Delta: 1}}},
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
	if a == b || shared.ValidateIdempotencyKey(a, shared.AttributeIdempotencyKey) != nil {
		t.Errorf("NewKey gave %q and %q", a, b)
	}
}
