package localstack

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/testenv"
)

// TestDataDirKeepsFirestoreAcrossRestarts: with a data folder (LOCALSTACK_DATA), a document written
// before the stack stops is there when it starts again; without one, it is not.
func TestDataDirKeepsFirestoreAcrossRestarts(t *testing.T) {
	testenv.FirestoreEmulatorHost(t)
	ports, err := emulators.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{FirestorePort: ports[0], PubSubPort: ports[1], NoAuth: true, LogDir: t.TempDir(), DataDir: t.TempDir(), Project: "demo-data"}
	ctx := context.Background()
	// run starts the emulators, writes the note if asked, reports whether it exists, and stops as
	// Stack.Stop does.
	run := func(o Options, write bool) bool {
		t.Helper()
		e, err := StartEmulators(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Stop()
		note := "http://" + e.Firestore.HostPort + "/v1/projects/" + o.Project + "/databases/(default)/documents/notes/n1"
		if write {
			if status := call(t, http.MethodPatch, note, `{"fields": {"text": {"stringValue": "kept"}}}`); status != http.StatusOK {
				t.Fatalf("write the note: %d", status)
			}
		}
		exists := call(t, http.MethodGet, note, "") == http.StatusOK
		if o.DataDir != "" {
			if err := exportFirestore(ctx, e.Firestore.HostPort, o.Project, o.DataDir); err != nil {
				t.Fatal(err)
			}
		}
		return exists
	}
	if !run(o, true) {
		t.Fatal("the note was not written")
	}
	if !run(o, false) {
		t.Error("after a restart with LOCALSTACK_DATA the note is gone")
	}
	if !run(o, false) {
		t.Error("after a second restart the note is gone (the exports replace each other)")
	}
	o.DataDir = ""
	if run(o, false) {
		t.Error("without LOCALSTACK_DATA the note is there: the stack starts empty by default")
	}
}

// call sends an owner's request to the emulator's REST API and returns the status.
func call(t *testing.T, method, url, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer owner")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
