package functions_test

import (
	"net/http"
	"testing"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/version"
)

// TestStartupLogNamesTheVersion: once an instance of the local stack serves, its log has the line
// operations.md reads to check an upgrade, naming the release.
func TestStartupLogNamesTheVersion(t *testing.T) {
	stack := testenv.Stack(t)
	resp, err := http.Get(stack.FunctionsURL + "/" + functions.EntryTop + "?group=g") // the instance starts on its first request
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	lines := stack.Logs(t, `"message":"`+functions.StartedMessage+`"`, `"version":"`+version.Version+`"`, `"severity":"INFO"`)
	if len(lines) == 0 {
		t.Errorf("no %q line naming version %s in the functions' log", functions.StartedMessage, version.Version)
	}
}
