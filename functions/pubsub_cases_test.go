package functions_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/shardcount/counters/shared/wire"
)

// pubsubMessage is the data and attributes of one Pub/Sub message.
type pubsubMessage struct {
	name  string
	data  []byte
	attrs map[string]string
	// published is the message's publishTime and its event's time (zero: none).
	published time.Time
}

// poisonMessages are messages that can never succeed, one of each kind. Those that name a valid
// counter name it with prefix, so a test can prove that nothing was written for them.
func poisonMessages(prefix string) []pubsubMessage {
	valid := func(n int) string { return fmt.Sprintf(`{"counter":"%s-poison-%d","delta":1}`, prefix, n) }
	item := fmt.Sprintf(`{"counter":"%s-poison-batch","delta":1}`, prefix)
	tooMany := "[" + strings.TrimSuffix(strings.Repeat(item+",", wire.MaxBatchIncrements+1), ",") + "]"
	msg := func(name, data string) pubsubMessage { return pubsubMessage{name: name, data: []byte(data)} }
	keyed := func(name, key string) pubsubMessage {
		return pubsubMessage{name: name, data: []byte(valid(len(name))), attrs: map[string]string{wire.AttributeIdempotencyKey: key}}
	}
	return []pubsubMessage{
		msg("not JSON", `not json`),
		// Pub/Sub refuses a message with neither data nor attributes.
		{name: "no data, attributes only", attrs: map[string]string{"counter": prefix + "-poison-0"}},
		msg("JSON array", `[`+valid(1)+`]`),
		msg("JSON string", `"likes"`),
		msg("JSON null", `null`),
		msg("data not UTF-8", "{\"counter\":\"caf\xe9\"}"),
		msg("two JSON objects", valid(2)+valid(3)),
		msg("unknown field", fmt.Sprintf(`{"counter":"%s-poison-4","delat":1}`, prefix)),
		msg("missing counter", `{"delta":1}`),
		msg("empty counter", `{"counter":"","delta":1}`),
		msg("counter is a number", `{"counter":7,"delta":1}`),
		msg("counter with slash", fmt.Sprintf(`{"counter":"%s/x","delta":1}`, prefix)),
		msg("counter is dot dot", `{"counter":"..","delta":1}`),
		msg("reserved counter ID", `{"counter":"__`+prefix+`__","delta":1}`),
		msg("the SLO canary", `{"counter":"`+wire.ReservedCounterPrefix+`canary","delta":-1}`),
		msg("counter over 1500 bytes", `{"counter":"`+prefix+strings.Repeat("x", wire.MaxCounterIDBytes)+`"}`),
		msg("delta zero", fmt.Sprintf(`{"counter":"%s-poison-5","delta":0}`, prefix)),
		msg("delta is a string", fmt.Sprintf(`{"counter":"%s-poison-6","delta":"1"}`, prefix)),
		msg("delta is a fraction", fmt.Sprintf(`{"counter":"%s-poison-7","delta":1.5}`, prefix)),
		msg("delta over MAX_DELTA", fmt.Sprintf(`{"counter":"%s-poison-8","delta":1000001}`, prefix)),
		msg("delta overflows int64", fmt.Sprintf(`{"counter":"%s-poison-9","delta":99999999999999999999}`, prefix)),
		msg("empty batch", `{"increments":[]}`),
		msg("batch over the limit", `{"increments":`+tooMany+`}`),
		msg("batch with one bad increment", fmt.Sprintf(`{"increments":[%s,{"counter":"%s-poison-10","delta":0}]}`, item, prefix)),
		msg("batch is not an array", `{"increments":`+item+`}`),
		msg("single and batch at once", fmt.Sprintf(`{"counter":"%s-poison-11","increments":[%s]}`, prefix, item)),
		keyed("empty idempotency_key", ""),
		keyed("idempotency_key over 1 KiB", strings.Repeat("k", wire.MaxIdempotencyKeyBytes+1)),
	}
}

// logEntry is one JSON log line of the functions.
type logEntry map[string]any

// readLogEntries parses JSON log lines, skipping lines that are not JSON (the framework's own output).
func readLogEntries(r io.Reader) []logEntry {
	var entries []logEntry
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		var e logEntry
		if json.Unmarshal(scanner.Bytes(), &e) == nil {
			entries = append(entries, e)
		}
	}
	return entries
}

// byMessageID counts the entries of each message ID that have the given severity and message.
func byMessageID(entries []logEntry, severity, message string) map[string]int {
	counts := map[string]int{}
	for _, e := range entries {
		if id, ok := e["message_id"].(string); ok && e["severity"] == severity && e["message"] == message {
			counts[id]++
		}
	}
	return counts
}

// Log messages of IncrementFromPubSub that the tests look for.
const (
	logPoison    = "poison message acknowledged without applying it"
	logDuplicate = "duplicate delivery acknowledged; already applied"
)
