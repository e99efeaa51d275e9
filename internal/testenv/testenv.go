// Package testenv gives tests the emulators and local stack `make test` starts, each test on a
// project of its own. Without them a test fails, or skips under -short.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
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

// SkipIfShort skips t under -short, naming what it needs.
func SkipIfShort(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: run `make test`, or go test without -short inside `bin/localstack exec --`", needs)
	}
}

// RequireTool skips t under -short; otherwise it fails t, with install's hint, unless name is on PATH.
func RequireTool(t testing.TB, name, install string) {
	t.Helper()
	SkipIfShort(t, name)
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not on the PATH: %s", name, install)
	}
}

// FirestoreEmulatorHost returns the emulator's address; it skips t under -short, fails t if unset.
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

// stackFirestoreHost is read at start, so tests that repoint FIRESTORE_EMULATOR_HOST still get rules.
var stackFirestoreHost = os.Getenv("FIRESTORE_EMULATOR_HOST")

// Project returns a fresh project ID with the stack's security rules loaded.
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

// Firestore is FirestoreOf a fresh Project.
func Firestore(t testing.TB) *firestore.Client {
	t.Helper()
	return FirestoreOf(t, Project(t))
}

// FirestoreOf returns an emulator client of project, closed when the test ends.
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

// DocumentPaths lists every existing document of the database at any depth, relative to its root.
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

// relativePath is ref's path below .../documents/.
func relativePath(ref *firestore.DocumentRef) string {
	_, rel, _ := strings.Cut(ref.Path, "/documents/")
	return rel
}

// StackEnv is what `localstack exec` tells tests: the functions' project, URL and JSON log file,
// the Pub/Sub emulator, and the URL of the event bridge's counts.
type StackEnv struct {
	Project        string
	FunctionsURL   string
	FunctionsLog   string
	PubSubHost     string
	EventsStatsURL string
}

// Stack returns the running stack's environment; it skips t under -short, fails t if any is unset.
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

// StackFirestore returns a client of the stack's project, closed when the test ends.
func (e StackEnv) StackFirestore(t testing.TB) *firestore.Client {
	t.Helper()
	client, err := firestore.NewClient(context.Background(), e.Project)
	if err != nil {
		t.Fatalf("firestore client: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// Logs returns the functions' log lines so far containing every part.
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

// UniqueID returns an ID with prefix that no other test uses.
func UniqueID(prefix string) string {
	return prefix + "-" + NewProjectID()[len("test-"):]
}

// FirestoreWithCommits is FirestoreThrough the emulator on a fresh project.
func FirestoreWithCommits(t testing.TB) (client *firestore.Client, commits func() []commitlog.Commit) {
	t.Helper()
	return FirestoreThrough(t, FirestoreEmulatorHost(t), NewProjectID())
}

// FirestoreThrough is a client of project via host (the emulator or a proxy); commits returns its
// successful commits so far.
func FirestoreThrough(t testing.TB, host, project string) (client *firestore.Client, commits func() []commitlog.Commit) {
	t.Helper()
	clients, commits := recordedClients(t, host, project, 1)
	return clients[0], commits
}

// FirestoreRecording is an emulator client of a fresh project that writes commitlog lines of its
// successful commits to commits and of its reads to reads; closed when the test ends.
func FirestoreRecording(t testing.TB, commits, reads io.Writer) *firestore.Client {
	t.Helper()
	opt, err := commitlog.NewRecorder(commits).RecordReads(reads).EmulatorOption(FirestoreEmulatorHost(t))
	if err != nil {
		t.Fatal(err)
	}
	client, err := firestore.NewClient(context.Background(), NewProjectID(), opt)
	if err != nil {
		t.Fatalf("firestore client: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// FirestoreInstancesWithCommits returns n clients of one fresh project, each with its own
// connection; commits returns all their commits so far.
func FirestoreInstancesWithCommits(t testing.TB, n int) (clients []*firestore.Client, commits func() []commitlog.Commit) {
	t.Helper()
	return recordedClients(t, FirestoreEmulatorHost(t), NewProjectID(), n)
}

// recordedClients returns n clients of project via host, recording their commits in one log.
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

// FaultyFirestore is a fresh project reached by Client through Proxy (no faults until set), whose
// answered commits Commits returns, and by Direct without it.
type FaultyFirestore struct {
	Proxy   *faultproxy.Proxy
	Client  *firestore.Client
	Commits func() []commitlog.Commit
	Direct  *firestore.Client
}

// FirestoreBehindFaultProxy returns a FaultyFirestore; the proxy stops when the test ends.
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

// ClientGetStatus reads docPath of project as an unauthenticated client, so security rules decide,
// and returns the HTTP status (403 when denied).
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
