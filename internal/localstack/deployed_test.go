package localstack_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// TestEventEntryPointsServedAsDeployed serves one event entry point as a deployment does: the
// Functions Framework with FUNCTION_TARGET (and the FUNCTION_SIGNATURE_TYPE=cloudevent a trigger
// deployment sets), the function at "/". The entry points are registered as HTTP functions; this
// shows Eventarc's binary-mode deliveries reach them: a Pub/Sub messagePublished event with JSON data
// is counted, a Firestore document.written event with protobuf data rolls its counter up.
func TestEventEntryPointsServedAsDeployed(t *testing.T) {
	testenv.FirestoreEmulatorHost(t)
	bin := testenv.BuildLocalstack(t)
	project := testenv.NewProjectID()
	db, err := firestore.NewClient(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := config.Default().Schema()

	pubsubEvent := func(url string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{"message":{"data":"eyJjb3VudGVyIjoiZGVwbG95ZWQiLCJkZWx0YSI6M30=","messageId":"m-1"},"subscription":"projects/p/subscriptions/eventarc"}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Ce-Specversion", "1.0")
		req.Header.Set("Ce-Id", "m-1")
		req.Header.Set("Ce-Type", eventhttp.EventPubSubMessagePublished)
		req.Header.Set("Ce-Source", "//pubsub.googleapis.com/projects/"+project+"/topics/"+shared.TopicIncrements)
		return req
	}
	base := serveTarget(t, bin, project, functions.EntryIncrementFromPubSub)
	if status := send(t, pubsubEvent(base+"/")); status != http.StatusOK {
		t.Fatalf("IncrementFromPubSub answered %d to an Eventarc Pub/Sub event, want 200", status)
	}
	store := counter.NewStore(db, schema, counter.Options{DefaultNumShards: 10})
	if got, err := store.Reader.Sum(context.Background(), "deployed"); err != nil || got != 3 {
		t.Fatalf("deployed = %d (%v) after a messagePublished event of +3, want 3", got, err)
	}

	firestoreEvent := func(url string) *http.Request {
		// No document after the write in the DocumentEventData (an empty protobuf): the function uses
		// the event's arrival as the time of the change.
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(nil))
		req.Header.Set("Content-Type", "application/protobuf")
		for k, v := range map[string]string{
			"Ce-Specversion": "1.0", "Ce-Id": "w-1", "Ce-Type": eventhttp.EventFirestoreDocWritten,
			"Ce-Source":  "//firestore.googleapis.com/projects/" + project + "/databases/(default)",
			"Ce-Subject": "documents/counters/deployed/shards/0", "Ce-Time": time.Now().UTC().Format(time.RFC3339Nano),
			"Ce-Project": project, "Ce-Database": "(default)", "Ce-Namespace": "(default)", "Ce-Document": "counters/deployed/shards/0",
		} {
			req.Header.Set(k, v)
		}
		return req
	}
	base = serveTarget(t, bin, project, functions.EntryRollupOnShardWrite)
	if status := send(t, firestoreEvent(base+"/")); status != http.StatusOK {
		t.Fatalf("RollupOnShardWrite answered %d to an Eventarc Firestore event, want 200", status)
	}
	snap, err := schema.RollupRef(db, "deployed").Get(context.Background())
	if err != nil {
		t.Fatalf("no roll-up after the document.written event: %v", err)
	}
	if got, _ := snap.DataAt(shared.FieldCount); got != int64(3) {
		t.Errorf("roll-up count %v, want 3", got)
	}
}

// serveTarget runs the functions process serving only entry point target at "/", as a deployed
// function's generated main does, and returns its base URL once it listens.
func serveTarget(t *testing.T, bin, project, target string) string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(bin, localstack.ServeFunctionsCommand)
	cmd.Env = append(os.Environ(), "PORT="+port, "GOOGLE_CLOUD_PROJECT="+project,
		"FUNCTION_TARGET="+target, "FUNCTION_SIGNATURE_TYPE=cloudevent")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s logs:\n%s", target, logs.String())
		}
	})
	base := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/"); err == nil {
			resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen within a minute", target)
		}
	}
}

// send sends req and returns the answer's status.
func send(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
