package webtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/testenv"
)

// webDir is the npm project, from this package's directory.
var webDir = filepath.Join("..", "..", "web")

const (
	// perTest bounds each node test (its own timeout, so a stuck one fails by name), and runLimit a
	// whole node run: a run that outlives it is killed with everything it started and fails here,
	// with what it printed, instead of holding `make test` until go test's own timeout.
	perTest  = 2 * time.Minute
	runLimit = 4 * time.Minute
	// pipeGrace is how long Wait waits for the output pipe once node itself has ended.
	pipeGrace = 5 * time.Second
)

// runNodeTests runs node --test on files of web/test with the stack's environment, failing with
// node's report unless every test passes.
func runNodeTests(t *testing.T, files ...string) {
	t.Helper()
	testenv.Stack(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: install Node.js 20 or later (these machines have it; .ci/run needs it)")
	}
	if _, err := os.Stat(filepath.Join(webDir, "node_modules", ".package-lock.json")); err != nil {
		t.Fatalf("web/node_modules is missing: run `make test`, which runs npm ci in web/ (%v)", err)
	}
	// --test-force-exit: once every test has ended, a handle left open (a client, a browser) cannot
	// keep the file's process, and so this run, alive.
	args := append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec", "--test-force-exit",
		fmt.Sprintf("--test-timeout=%d", perTest.Milliseconds())}, files...)
	out, err := runNode(webDir, runLimit, args...)
	t.Logf("node %v:\n%s", args, out)
	if err != nil {
		t.Fatalf("node tests: %v", err)
	}
}

// errRunLimit says a node run was killed for outliving its limit.
var errRunLimit = errors.New("did not finish in time: killed with its process group")

// runNode runs node with args in dir and returns what it printed. A run that outlives limit is
// killed with its whole process group; a descendant that escaped the group and still holds the
// output pipe delays the return by at most pipeGrace.
func runNode(dir string, limit time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeGrace
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.Bytes(), fmt.Errorf("node %v: %w after %v", args, errRunLimit, limit)
	}
	if err != nil {
		return out.Bytes(), fmt.Errorf("node %v: %w", args, err)
	}
	return out.Bytes(), nil
}

// TestRunNodeKillsAHungRun: a script that never ends, with a detached descendant holding the output
// pipe (as a browser left open would), is killed at the limit and its output kept.
func TestRunNodeKillsAHungRun(t *testing.T) {
	testenv.SkipIfShort(t, "Node.js")
	out, err := runNode("testdata", 2*time.Second, "hangs.mjs")
	if !errors.Is(err, errRunLimit) {
		t.Fatalf("err = %v, want %v; output:\n%s", err, errRunLimit, out)
	}
	var pid int
	if _, scanErr := fmt.Sscanf(string(out), "holder %d", &pid); scanErr != nil {
		t.Fatalf("output %q does not name the pipe holder: %v", out, scanErr)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Errorf("kill the detached holder %d: %v", pid, err)
	}
}

// TestLiveCounter: the example app's latency compensation (pending likes shown once).
func TestLiveCounter(t *testing.T) { runNodeTests(t, "test/live-counter.test.mjs") }

// TestFirebaseJSSDK: the JS SDK against the stack with firestore.rules: a roll-up listener follows
// HTTP increments, roll-ups may be listed 100 at most, and every other client read or write is
// denied; the guide's incrementCounter under firestore.guide-clients.rules, signed in, may increment
// existing shards by one and do nothing else.
func TestFirebaseJSSDK(t *testing.T) {
	runNodeTests(t, "test/sdk.test.mjs", "test/guide.test.mjs")
}

// TestFirestoreCounterExtensionClients: apps that ship the firestore-counter extension's clients,
// under firestore.extension-clients.rules: many clients at once, nested fields, two fields in one
// shard, folded exactly into the main document (other fields untouched) within about 2 s of the last
// write by FoldExtensionShards; every write but a small step of a counted field on the client's own
// UUID shard is denied. The extension's own web client, compiled from its unchanged source (set
// FIRESTORE_COUNTER_WEB_CLIENT offline; see docs/development.md), shows a live view that exceeds its
// own increments only while one of its writes is in flight, by at most what folds took from its shard
// meanwhile, and is exact once its writes are acknowledged.
func TestFirestoreCounterExtensionClients(t *testing.T) {
	runNodeTests(t, "test/extension.test.mjs", "test/extension-client.test.mjs")
}

// TestExampleAppInChromium: the live example app in headless Chromium, clicks included; the
// screenshot lands in web/test-results/example-app.png.
func TestExampleAppInChromium(t *testing.T) {
	path := os.Getenv("CHROMIUM_PATH")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no Chromium at %s: apt-get install chromium (.ci/run does), or set CHROMIUM_PATH", path)
	}
	runNodeTests(t, "test/browser.test.mjs")
}
