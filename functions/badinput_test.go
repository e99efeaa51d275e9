package functions_test

import (
	"strings"
	"testing"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
)

// TestBadRequestsChangeNothing sends requests that must be refused and asserts, for each, the status,
// the field the error names, and that no document at all was written.
func TestBadRequestsChangeNothing(t *testing.T) {
	const jsonType = "application/json"
	long := strings.Repeat("x", wire.MaxCounterIDBytes+1)
	cases := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		status      int
		field       string
		allow       string
	}{
		{"increment with GET", "GET", "/Increment", "", "", 405, "", "POST"},
		{"increment with PUT", "PUT", "/Increment", jsonType, `{"counter":"a"}`, 405, "", "POST"},
		{"count with POST", "POST", "/Count?counter=a", jsonType, `{}`, 405, "", "GET, HEAD"},
		{"configure with GET", "GET", "/ConfigureCounter?counter=a", "", "", 405, "", "PUT, POST, DELETE"},
		{"delete without counter", "DELETE", "/ConfigureCounter", "", "", 400, "counter", ""},
		{"delete an unknown counter", "DELETE", "/ConfigureCounter?counter=nobody", "", "", 404, "counter", ""},
		{"text/plain body", "POST", "/Increment", "text/plain", `{"counter":"a"}`, 415, "", ""},
		{"no content type", "POST", "/Increment", "", `{"counter":"a"}`, 415, "", ""},
		{"body over 64 KiB", "POST", "/Increment", jsonType, `{"counter":"` + strings.Repeat("a", 65<<10) + `"}`, 413, "", ""},
		{"malformed JSON", "POST", "/Increment", jsonType, `{"counter":`, 400, "", ""},
		{"JSON array", "POST", "/Increment", jsonType, `[{"counter":"a"}]`, 400, "", ""},
		{"empty body", "POST", "/Increment", jsonType, ``, 400, "", ""},
		{"two objects", "POST", "/Increment", jsonType, `{"counter":"a"}{"counter":"b"}`, 400, "", ""},
		{"unknown field", "POST", "/Increment", jsonType, `{"counter":"a","delat":2}`, 400, "delat", ""},
		{"body not UTF-8", "POST", "/Increment", jsonType, "{\"counter\":\"caf\xe9\"}", 400, "", ""},
		{"missing counter", "POST", "/Increment", jsonType, `{"delta":1}`, 400, "counter", ""},
		{"empty counter", "POST", "/Increment", jsonType, `{"counter":""}`, 400, "counter", ""},
		{"counter is a number", "POST", "/Increment", jsonType, `{"counter":7}`, 400, "counter", ""},
		{"counter over 1500 bytes", "POST", "/Increment", jsonType, `{"counter":"` + long + `"}`, 400, "counter", ""},
		{"counter with slash", "POST", "/Increment", jsonType, `{"counter":"a/b"}`, 400, "counter", ""},
		{"counter is dot", "POST", "/Increment", jsonType, `{"counter":"."}`, 400, "counter", ""},
		{"counter is dot dot", "POST", "/Increment", jsonType, `{"counter":".."}`, 400, "counter", ""},
		{"reserved counter ID", "POST", "/Increment", jsonType, `{"counter":"__likes__"}`, 400, "counter", ""},
		{"increment the SLO canary", "POST", "/Increment", jsonType, `{"counter":"_counters_canary","delta":-1}`, 400, "counter", ""},
		{"increment a counter of the deployment's own", "POST", "/Increment", jsonType, `{"counter":"_counters_x"}`, 400, "counter", ""},
		{"configure the SLO canary", "PUT", "/ConfigureCounter", jsonType, `{"counter":"_counters_canary","num_shards":5}`, 400, "counter", ""},
		{"reset the SLO canary", "POST", "/ConfigureCounter", jsonType, `{"counter":"_counters_canary","reset":true}`, 400, "counter", ""},
		{"delete the SLO canary", "DELETE", "/ConfigureCounter?counter=_counters_canary", "", "", 400, "counter", ""},
		{"delta is a string", "POST", "/Increment", jsonType, `{"counter":"a","delta":"2"}`, 400, "delta", ""},
		{"delta is a fraction", "POST", "/Increment", jsonType, `{"counter":"a","delta":1.5}`, 400, "delta", ""},
		{"delta in exponent form", "POST", "/Increment", jsonType, `{"counter":"a","delta":1e3}`, 400, "delta", ""},
		{"delta overflows int64", "POST", "/Increment", jsonType, `{"counter":"a","delta":99999999999999999999}`, 400, "delta", ""},
		{"delta is zero", "POST", "/Increment", jsonType, `{"counter":"a","delta":0}`, 400, "delta", ""},
		{"delta over the maximum", "POST", "/Increment", jsonType, `{"counter":"a","delta":1000001}`, 400, "delta", ""},
		{"delta under the minimum", "POST", "/Increment", jsonType, `{"counter":"a","delta":-1000001}`, 400, "delta", ""},
		{"count without counter", "GET", "/Count", "", "", 400, "counter", ""},
		{"count with two counters", "GET", "/Count?counter=a&counter=b", "", "", 400, "counter", ""},
		{"count with invalid UTF-8 ID", "GET", "/Count?counter=%FF", "", "", 400, "counter", ""},
		{"count of unknown counter", "GET", "/Count?counter=nobody", "", "", 404, "counter", ""},
		{"configure without num_shards", "PUT", "/ConfigureCounter", jsonType, `{"counter":"a"}`, 400, "num_shards", ""},
		{"configure with 0 shards", "PUT", "/ConfigureCounter", jsonType, `{"counter":"a","num_shards":0}`, 400, "num_shards", ""},
		{"configure with 1001 shards", "POST", "/ConfigureCounter", jsonType, `{"counter":"a","num_shards":1001}`, 400, "num_shards", ""},
		{"configure with string shards", "PUT", "/ConfigureCounter", jsonType, `{"counter":"a","num_shards":"5"}`, 400, "num_shards", ""},
		{"configure with min above max", "PUT", "/ConfigureCounter", jsonType, `{"counter":"a","min_shards":9,"max_shards":3}`, 400, "min_shards", ""},
		{"configure num_shards outside bounds", "PUT", "/ConfigureCounter", jsonType, `{"counter":"a","num_shards":2,"min_shards":3}`, 400, "num_shards", ""},
		{"configure with 0 max_shards", "PUT", "/ConfigureCounter", jsonType, `{"counter":"a","max_shards":0}`, 400, "max_shards", ""},
		{"reset with num_shards", "POST", "/ConfigureCounter", jsonType, `{"counter":"a","reset":true,"num_shards":3}`, 400, "reset", ""},
		{"reset an unknown counter", "POST", "/ConfigureCounter", jsonType, `{"counter":"nobody","reset":true}`, 404, "counter", ""},
		{"configure an unknown window", "PUT", "/ConfigureCounter", jsonType, `{"counter":"a","windows":["day","week"]}`, 400, "windows", ""},
		{"configure windows as a string", "PUT", "/ConfigureCounter", jsonType, `{"counter":"a","windows":"day"}`, 400, "windows", ""},
		{"reset with windows", "POST", "/ConfigureCounter", jsonType, `{"counter":"a","reset":true,"windows":["day"]}`, 400, "reset", ""},
		{"count an unknown window", "GET", "/Count?counter=a&window=week", "", "", 400, "window", ""},
		{"count two windows", "GET", "/Count?counter=a&window=day&window=hour", "", "", 400, "window", ""},
		{"count a bucket without window", "GET", "/Count?counter=a&bucket=2026-11-23", "", "", 400, "window", ""},
		{"count an hour bucket as a day", "GET", "/Count?counter=a&window=day&bucket=2026-11-23T18", "", "", 400, "bucket", ""},
		{"count an impossible day", "GET", "/Count?counter=a&window=day&bucket=2026-02-30", "", "", 400, "bucket", ""},
		{"count a window of an unknown counter", "GET", "/Count?counter=nobody&window=day", "", "", 404, "counter", ""},
		{"configure a reserved ID", "PUT", "/ConfigureCounter", jsonType, `{"counter":"__a__","num_shards":5}`, 400, "counter", ""},
	}
	srv := newTestServer(t, config.Default())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := srv.do(t, c.method, c.path, c.contentType, []byte(c.body))
			if a.status != c.status {
				t.Fatalf("status %d, want %d: %s", a.status, c.status, a.raw)
			}
			msg, _ := a.body["error"].(string)
			if msg == "" {
				t.Errorf("no error message: %s", a.raw)
			}
			field, _ := a.body["field"].(string)
			if field != c.field {
				t.Errorf("field %q, want %q (%s)", field, c.field, a.raw)
			}
			if got := a.header.Get("Allow"); got != c.allow {
				t.Errorf("Allow %q, want %q", got, c.allow)
			}
			if docs := testenv.DocumentPaths(t, srv.client); len(docs) > 0 {
				t.Errorf("a refused request wrote %v", docs)
			}
		})
	}
}
