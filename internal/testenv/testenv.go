// Package testenv gives tests what they need from the emulators that `make test` starts: a Firestore
// client on a project of their own (the emulator isolates data per project), so tests never see each
// other's documents. A test run without the emulators fails rather than skips: a skipped guarantee is
// not a kept one.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/faultproxy"
)

// SkipIfShort skips t under `go test -short`, saying how to run it: t needs what `make test`
// starts (the emulators, the local stack, gcloud, node or Chromium), named by needs.
func SkipIfShort(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: run `make test`, or go test without -short inside `bin/localstack exec --`", needs)
	}
}

// RequireTool skips t under -short, like SkipIfShort; otherwise it fails t unless name is on the
// PATH, saying how to install it (install).
func RequireTool(t testing.TB, name, install string) {
	t.Helper()
	SkipIfShort(t, name)
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not on the PATH: %s", name, install)
	}
}

// FirestoreEmulatorHost returns the emulator's address. Under -short it skips t; otherwise it fails
// t when there is no emulator.
func FirestoreEmulatorHost(t testing.TB) string {
	t.Helper()
	SkipIfShort(t, "the Firestore emulator")
	host := os.Getenv("FIRESTORE_EMULATOR_HOST")
	if host == "" {
		t.Fatal("FIRESTORE_EMULATOR_HOST is not set: run the tests with `make test`, which starts the emulators")
	}
	return host
}

// NewProjectID returns a project ID no other test uses.
func NewProjectID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "test-" + hex.EncodeToString(b)
}

// stackFirestoreHost is the stack's Firestore emulator as the test binary started: tests that point
// FIRESTORE_EMULATOR_HOST elsewhere (at a dead port, say) still get their project's rules loaded.
var stackFirestoreHost = os.Getenv("FIRESTORE_EMULATOR_HOST")

// Project returns a fresh project ID with the stack's security rules (LOCALSTACK_RULES_FILE) loaded
// into the emulator for it, so client SDKs meet production's rules there too.
func Project(t testing.TB) string {
	t.Helper()
	host := stackFirestoreHost
	if host == "" {
		host = FirestoreEmulatorHost(t)
	}
	rules := os.Getenv(emulators.EnvRulesFile)
	if rules == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which loads the security rules", emulators.EnvRulesFile)
	}
	project := NewProjectID()
	if err := emulators.LoadRulesFile(context.Background(), host, project, rules); err != nil {
		t.Fatal(err)
	}
	return project
}

// Firestore returns a client of the Firestore emulator on a fresh project (with the stack's security
// rules loaded), closed when the test ends.
func Firestore(t testing.TB) *firestore.Client {
	t.Helper()
	return FirestoreOf(t, Project(t))
}

// FirestoreOf returns a client of the Firestore emulator on project, closed when the test ends.
func FirestoreOf(t testing.TB, project string) *firestore.Client {
	t.Helper()
	FirestoreEmulatorHost(t)
	client, err := firestore.NewClient(context.Background(), project)
	if err != nil {
		t.Fatalf("firestore client: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// DocumentPaths lists every document in the client's database, in every collection at any depth, as
// paths relative to the database. Tests use it to prove that a request wrote nothing.
func DocumentPaths(t testing.TB, client *firestore.Client) []string {
	t.Helper()
	ctx := context.Background()
	var paths []string
	var walk func(cols *firestore.CollectionIterator)
	walk = func(cols *firestore.CollectionIterator) {
		for {
			col, err := cols.Next()
			if err == iterator.Done {
				return
			}
			if err != nil {
				t.Fatalf("list collections: %v", err)
			}
			refs, err := col.DocumentRefs(ctx).GetAll()
			if err != nil {
				t.Fatalf("list documents of %s: %v", col.Path, err)
			}
			for _, ref := range refs {
				if snap, err := ref.Get(ctx); err == nil && snap.Exists() {
					paths = append(paths, relativePath(ref))
				}
				walk(ref.Collections(ctx))
			}
		}
	}
	walk(client.Collections(ctx))
	return paths
}

// relativePath is a document's path below .../documents/.
func relativePath(ref *firestore.DocumentRef) string {
	_, rel, _ := strings.Cut(ref.Path, "/documents/")
	return rel
}

// StackEnv is what `localstack exec` tells the tests about the running stack.
type StackEnv struct {
	// Project is the stack's project: the functions process reads and writes its Firestore data.
	Project string
	// FunctionsURL is the functions' base URL.
	FunctionsURL string
	// FunctionsLog is the file that receives the functions' JSON logs.
	FunctionsLog string
	// PubSubHost is the Pub/Sub emulator's address.
	PubSubHost string
	// EventsStatsURL answers with the event bridge's counts of Firestore events.
	EventsStatsURL string
}

// Stack returns the running stack's environment. Under -short it skips t; otherwise it fails t when
// any of it is missing.
func Stack(t testing.TB) StackEnv {
	t.Helper()
	SkipIfShort(t, "the local stack")
	FirestoreEmulatorHost(t)
	env := StackEnv{
		Project:        os.Getenv("GOOGLE_CLOUD_PROJECT"),
		FunctionsURL:   os.Getenv("LOCALSTACK_FUNCTIONS_URL"),
		FunctionsLog:   os.Getenv("LOCALSTACK_FUNCTIONS_LOG"),
		PubSubHost:     os.Getenv("PUBSUB_EMULATOR_HOST"),
		EventsStatsURL: os.Getenv("LOCALSTACK_EVENTS_STATS_URL"),
	}
	if env.Project == "" || env.FunctionsURL == "" || env.FunctionsLog == "" || env.PubSubHost == "" || env.EventsStatsURL == "" {
		t.Fatalf("the local stack's environment is incomplete (%+v): run the tests with `make test`", env)
	}
	return env
}

// StackFirestore returns a Firestore client of the stack's own project, closed when the test ends.
func (e StackEnv) StackFirestore(t testing.TB) *firestore.Client {
	t.Helper()
	client, err := firestore.NewClient(context.Background(), e.Project)
	if err != nil {
		t.Fatalf("firestore client: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// Logs returns the functions' log lines so far that contain every one of parts.
func (e StackEnv) Logs(t testing.TB, parts ...string) []string {
	t.Helper()
	b, err := os.ReadFile(e.FunctionsLog)
	if err != nil {
		t.Fatalf("read functions log: %v", err)
	}
	var lines []string
	for line := range strings.Lines(string(b)) {
		matches := true
		for _, p := range parts {
			matches = matches && strings.Contains(line, p)
		}
		if matches {
			lines = append(lines, line)
		}
	}
	return lines
}

// UniqueID returns an ID with prefix that no other test uses, for counters in the shared stack.
func UniqueID(prefix string) string {
	return prefix + "-" + NewProjectID()[len("test-"):]
}

// FirestoreWithCommits is Firestore, with every commit of the client recorded: commits returns
// those so far.
func FirestoreWithCommits(t testing.TB) (client *firestore.Client, commits func() []commitlog.Commit) {
	t.Helper()
	return FirestoreThrough(t, FirestoreEmulatorHost(t), NewProjectID())
}

// FirestoreThrough is a client of project on the emulator reached at host (the emulator itself, or
// a fault proxy in front of it), with every successful commit recorded: commits returns those so far.
func FirestoreThrough(t testing.TB, host, project string) (client *firestore.Client, commits func() []commitlog.Commit) {
	t.Helper()
	clients, commits := recordedClients(t, host, project, 1)
	return clients[0], commits
}

// FirestoreInstancesWithCommits returns n Firestore clients of one fresh emulator project, each with
// a connection of its own as n function instances would have, every commit of each recorded in one
// log: commits returns those so far.
func FirestoreInstancesWithCommits(t testing.TB, n int) (clients []*firestore.Client, commits func() []commitlog.Commit) {
	t.Helper()
	return recordedClients(t, FirestoreEmulatorHost(t), NewProjectID(), n)
}

// recordedClients returns n clients of project on the emulator reached at host, each with a
// connection of its own, every successful commit of each recorded in one log.
func recordedClients(t testing.TB, host, project string, n int) (clients []*firestore.Client, commits func() []commitlog.Commit) {
	t.Helper()
	FirestoreEmulatorHost(t)
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	rec := commitlog.NewRecorder(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}))
	for range n {
		opt, err := rec.EmulatorOption(host)
		if err != nil {
			t.Fatal(err)
		}
		client, err := firestore.NewClient(context.Background(), project, opt)
		if err != nil {
			t.Fatalf("firestore client: %v", err)
		}
		t.Cleanup(func() { _ = client.Close() })
		clients = append(clients, client)
	}
	return clients, func() []commitlog.Commit {
		mu.Lock()
		defer mu.Unlock()
		c, err := commitlog.Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// FaultyFirestore is a fresh emulator project reached two ways: through a fault proxy (forwarding
// untouched until the test sets faults) with every confirmed commit recorded, and directly, to read
// the truth.
type FaultyFirestore struct {
	// Proxy stands between Client and the emulator.
	Proxy *faultproxy.Proxy
	// Client reaches the emulator through Proxy.
	Client *firestore.Client
	// Commits returns the commits Client made whose answers reached it.
	Commits func() []commitlog.Commit
	// Direct reaches the same project without the proxy.
	Direct *firestore.Client
}

// FirestoreBehindFaultProxy starts a fault proxy in front of the emulator, stopped when the test ends.
func FirestoreBehindFaultProxy(t testing.TB) FaultyFirestore {
	t.Helper()
	project := NewProjectID()
	proxy, err := faultproxy.Start(FirestoreEmulatorHost(t), faultproxy.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	client, commits := FirestoreThrough(t, proxy.Addr(), project)
	return FaultyFirestore{Proxy: proxy, Client: client, Commits: commits, Direct: FirestoreOf(t, project)}
}

// writerFunc is an io.Writer from a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// ClientGetStatus reads the document at docPath (relative to the database) of project as an
// unauthenticated Firebase client does, through the emulator's REST API without the admin "owner"
// credential, so the project's security rules decide: it returns the HTTP status (200, 404 or, when
// the rules deny the read, 403).
func ClientGetStatus(t testing.TB, project, docPath string) int {
	t.Helper()
	u := "http://" + FirestoreEmulatorHost(t) + "/v1/projects/" + project + "/databases/(default)/documents/" + docPath
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("client read of %s: %v", docPath, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
