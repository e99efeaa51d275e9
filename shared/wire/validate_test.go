package wire

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// wantFieldError fails t unless err is a *FieldError (possibly wrapped) naming field, with a message.
func wantFieldError(t *testing.T, err error, field string) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error = %v (%T), want *FieldError", err, err)
	}
	if fe.Field != field {
		t.Errorf("FieldError.Field = %q, want %q", fe.Field, field)
	}
	if fe.Message == "" {
		t.Errorf("FieldError.Message is empty")
	}
	if got, want := fe.Error(), field+": "+fe.Message; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestValidateCounterID(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		wantErr bool
		// wantMsg, when set, must appear in the error message.
		wantMsg string
	}{
		{name: "simple", id: "likes"},
		{name: "single char", id: "a"},
		{name: "unicode", id: "いいね"},
		{name: "1500 bytes", id: strings.Repeat("a", 1500)},
		{name: "1500 bytes multibyte", id: strings.Repeat("い", 500)}, // 3 bytes each
		{name: "1501 bytes", id: strings.Repeat("a", 1501), wantErr: true, wantMsg: "1501 bytes"},
		{name: "1502 bytes multibyte", id: strings.Repeat("い", 500) + "é", wantErr: true},
		{name: "empty", id: "", wantErr: true, wantMsg: "required"},
		{name: "slash", id: "a/b", wantErr: true, wantMsg: "'/'"},
		{name: "leading slash", id: "/a", wantErr: true},
		{name: "dot", id: ".", wantErr: true},
		{name: "dot dot", id: "..", wantErr: true},
		{name: "three dots", id: "..."},
		{name: "reserved __x__", id: "__x__", wantErr: true, wantMsg: "__.*__"},
		{name: "reserved ____", id: "____", wantErr: true},
		{name: "two underscores", id: "__"},
		{name: "three underscores", id: "___"},
		{name: "leading underscores only", id: "__x"},
		{name: "trailing underscores only", id: "x__"},
		{name: "invalid UTF-8", id: "\xff", wantErr: true, wantMsg: "UTF-8"},
		{name: "invalid UTF-8 inside valid", id: "ab\xc3", wantErr: true},
		{name: "leading dot", id: ".a"},
		{name: "trailing dot", id: "a."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateCounterID(tt.id)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("ValidateCounterID(%q) = %v, want nil", tt.id, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateCounterID(%q) = nil, want error", tt.id)
			}
			wantFieldError(t, err, "counter")
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not mention %q", err, tt.wantMsg)
			}
		})
	}
}

func TestValidateDelta(t *testing.T) {
	const maxMag = 1_000_000
	tests := []struct {
		name    string
		delta   int64
		max     int64
		wantErr bool
	}{
		{name: "zero", delta: 0, max: maxMag, wantErr: true},
		{name: "one", delta: 1, max: maxMag},
		{name: "minus one", delta: -1, max: maxMag},
		{name: "plus max", delta: maxMag, max: maxMag},
		{name: "minus max", delta: -maxMag, max: maxMag},
		{name: "plus max+1", delta: maxMag + 1, max: maxMag, wantErr: true},
		{name: "minus max+1", delta: -(maxMag + 1), max: maxMag, wantErr: true},
		{name: "max 1 accepts 1", delta: 1, max: 1},
		{name: "max 1 rejects 2", delta: 2, max: 1, wantErr: true},
		{name: "max 1 rejects -2", delta: -2, max: 1, wantErr: true},
		{name: "MinInt64 with 2^53 bound", delta: math.MinInt64, max: 1 << 53, wantErr: true},
		{name: "MaxInt64 with 2^53 bound", delta: math.MaxInt64, max: 1 << 53, wantErr: true},
		{name: "minus 2^53 with 2^53 bound", delta: -(1 << 53), max: 1 << 53},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateDelta(tt.delta, tt.max)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("ValidateDelta(%d, %d) = %v, want nil", tt.delta, tt.max, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateDelta(%d, %d) = nil, want error", tt.delta, tt.max)
			}
			wantFieldError(t, err, "delta")
		})
	}
}

func TestValidateDeltaMessageNamesRange(t *testing.T) {
	err := ValidateDelta(1_000_001, 1_000_000)
	if err == nil || !strings.Contains(err.Error(), "-1000000") || !strings.Contains(err.Error(), "1000000") {
		t.Errorf("ValidateDelta error = %v, want it to state the allowed range -1000000..1000000", err)
	}
}

func TestValidateNumShards(t *testing.T) {
	tests := []struct {
		name    string
		n       int64
		wantErr bool
	}{
		{name: "zero", n: 0, wantErr: true},
		{name: "one", n: 1},
		{name: "ten", n: 10},
		{name: "thousand", n: 1000},
		{name: "thousand and one", n: 1001, wantErr: true},
		{name: "minus one", n: -1, wantErr: true},
		{name: "MinInt64", n: math.MinInt64, wantErr: true},
		{name: "MaxInt64", n: math.MaxInt64, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateNumShards(tt.n)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("ValidateNumShards(%d) = %v, want nil", tt.n, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateNumShards(%d) = nil, want error", tt.n)
			}
			wantFieldError(t, err, "num_shards")
			if !strings.Contains(err.Error(), "1 to 1000") {
				t.Errorf("error %q does not state the allowed range 1 to 1000", err)
			}
		})
	}
}
