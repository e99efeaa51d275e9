package localstack

import (
	"context"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"google.golang.org/api/option"

	"github.com/shardcount/counters/client"
	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/testenv"
)

// TestRunAttachedCountsInItsDatabaseOnly is an app's world with the stack attached to it: `make run`
// with FIRESTORE_EMULATOR_HOST, PUBSUB_EMULATOR_HOST and FIREBASE_AUTH_EMULATOR_HOST set (here, the
// emulators of the stack the tests run in) and configured for one project's named database starts no
// emulator and says so. It counts increments and the app's like documents in that database, seed
// likes written before it attached included. The app's rules and data stay: a note only the app's
// rules open is readable, and the same like documents in the project's default database and in
// another project (both databases) get no counter, roll-up or any other document. Stopped, it leaves
// the emulator running with the app's documents and the counters'.
func TestRunAttachedCountsInItsDatabaseOnly(t *testing.T) {
	host := testenv.FirestoreEmulatorHost(t)
	bin := testenv.BuildLocalstack(t)
	ctx := context.Background()
	const database = "appdb"
	app, other := testenv.NewProjectID(), testenv.NewProjectID()
	appRules := "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n" +
		"    match /notes/{note} { allow read: if true; }\n  }\n}\n"
	if err := emulators.LoadRules(ctx, host, app, appRules); err != nil {
		t.Fatal(err)
	}
	open := func(project, database string) *firestore.Client {
		c, err := firestore.NewClientWithDatabase(ctx, project, database)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ours := open(app, database)
	seed := []string{"notes/n1", "posts/p1/likes/u1"}
	others := map[string]*firestore.Client{
		app + " (default)": open(app, "(default)"), other + " (default)": open(other, "(default)"), other + " " + database: open(other, database),
	}
	for _, c := range append(slices.Collect(maps.Values(others)), ours) {
		for _, path := range seed {
			if _, err := c.Doc(path).Create(ctx, map[string]any{"at": "seed"}); err != nil {
				t.Fatal(err)
			}
		}
	}

	ports, err := emulators.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	line, stop := testenv.RunLocalstack(t, bin, append([]string{"PORT=" + ports[0], "APP_PORT=" + ports[1], "LOCALSTACK_LOGS=" + t.TempDir(),
		"GOOGLE_CLOUD_PROJECT=" + app, "FIRESTORE_DATABASE=" + database, "FIRESTORE_EMULATOR_HOST=" + host,
		"PUBSUB_EMULATOR_HOST=" + os.Getenv("PUBSUB_EMULATOR_HOST"), emulators.AuthHostEnv + "=" + os.Getenv(emulators.AuthHostEnv)},
		OSPickedPorts...)...)
	for _, want := range []string{" database=appdb ", " firestore=" + host + " (its security rules left as they are) ", " attached=firestore,pubsub,auth started=none "} {
		if !strings.Contains(line, want) {
			t.Errorf("ready line lacks %q: %s", want, line)
		}
	}

	functions, err := client.New(ctx, option.WithEndpoint("http://127.0.0.1:"+ports[0]))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := functions.Increment(ctx, client.Increment{Counter: "attached", Delta: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ours.Doc("posts/p1/likes/u2").Create(ctx, map[string]any{"at": "now"}); err != nil {
		t.Fatal(err)
	}
	rollupCount := func(id string) int64 {
		snap, err := ours.Doc("rollups/" + id).Get(ctx)
		if err != nil {
			return -1
		}
		n, _ := snap.DataAt("count")
		v, _ := n.(int64)
		return v
	}
	waitFor(t, time.Minute, func() bool { return rollupCount("likes-p1") == 2 && rollupCount("attached") == 2 })
	if got, err := functions.Count(ctx, "likes-p1"); err != nil || got.Count != 2 {
		t.Errorf("Count likes-p1 = %+v (%v), want the seed like and the new one: 2", got, err)
	}

	// The emulator holds a project's rules to its default database only.
	if status := testenv.ClientGetStatus(t, app, "notes/n1"); status != http.StatusOK {
		t.Errorf("a client read of the note the app's rules open answered %d: the app's rules were replaced", status)
	}
	if status := testenv.ClientGetStatus(t, app, "posts/p1/likes/u1"); status != http.StatusForbidden {
		t.Errorf("a client read of a like the app's rules do not open answered %d, want 403", status)
	}
	for name, c := range others {
		if got := testenv.DocumentPaths(t, c); !slices.Equal(sorted(got), sorted(seed)) {
			t.Errorf("%s holds %v after the stack counted elsewhere, want only the app's %v", name, got, seed)
		}
	}

	if err := stop(); err != nil {
		t.Errorf("localstack after SIGTERM: %v, want exit 0", err)
	}
	left := testenv.DocumentPaths(t, ours)
	for _, want := range []string{"notes/n1", "posts/p1/likes/u1", "posts/p1/likes/u2", "rollups/likes-p1", "counters/attached"} {
		if !slices.Contains(left, want) {
			t.Errorf("after the stack stopped, the attached emulator lacks %s (has %v)", want, left)
		}
	}
}

// sorted is a sorted copy of s.
func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
