package functions_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/shardcount/counters/functions/config"
)

// TestIncrementAnswersWhenItReceivedTheIncrement: an unkeyed answer carries received_at, taken before
// the write (apps compare it with the roll-up's updated_at); a keyed answer leaves it out, so that a
// retry repeats the first answer byte for byte.
func TestIncrementAnswersWhenItReceivedTheIncrement(t *testing.T) {
	srv := newTestServer(t, config.Default())
	before := time.Now()
	a := srv.postJSON(t, http.MethodPost, "/Increment", map[string]any{"counter": "seen"})
	after := time.Now()
	text, _ := a.body["received_at"].(string)
	received, err := time.Parse(time.RFC3339Nano, text)
	if a.status != http.StatusOK || err != nil || received.Before(before) || received.After(after) {
		t.Errorf("answer %d %s: received_at %q not between the request's start %s and its answer %s", a.status, a.raw, text, before, after)
	}
	keyed := srv.postKeyed(t, `{"counter":"seen"}`, "key-1")
	if _, ok := keyed.body["received_at"]; keyed.status != http.StatusOK || ok {
		t.Errorf("keyed answer %d %s: want no received_at", keyed.status, keyed.raw)
	}
}
