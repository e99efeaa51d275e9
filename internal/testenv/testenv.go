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
	"os"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/shardcount/counters/internal/commitlog"
)

// FirestoreEmulatorHost returns the emulator's address, failing the test when there is none.
func FirestoreEmulatorHost(t testing.TB) string {
	t.Helper()
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

// Firestore returns a client of the Firestore emulator on a fresh project, closed when the test ends.
func Firestore(t testing.TB) *firestore.Client {
	t.Helper()
	FirestoreEmulatorHost(t)
	client, err := firestore.NewClient(context.Background(), NewProjectID())
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

// Stack returns the running stack's environment, failing the test when any of it is missing.
func Stack(t testing.TB) StackEnv {
	t.Helper()
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
	clients, commits := FirestoreInstancesWithCommits(t, 1)
	return clients[0], commits
}

// FirestoreInstancesWithCommits returns n Firestore clients of one fresh emulator project, each with
// a connection of its own as n function instances would have, every commit of each recorded in one
// log: commits returns those so far.
func FirestoreInstancesWithCommits(t testing.TB, n int) (clients []*firestore.Client, commits func() []commitlog.Commit) {
	t.Helper()
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	rec := commitlog.NewRecorder(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}))
	project := NewProjectID()
	for range n {
		opt, err := rec.EmulatorOption(FirestoreEmulatorHost(t))
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

// writerFunc is an io.Writer from a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
