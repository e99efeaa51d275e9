package webtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/shardcount/counters/internal/testenv"
)

// webDir is the npm project, from this package's directory.
var webDir = filepath.Join("..", "..", "web")

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
	args := append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)
	cmd := exec.Command("node", args...)
	cmd.Dir = webDir
	out, err := cmd.CombinedOutput()
	t.Logf("node %v:\n%s", args, out)
	if err != nil {
		t.Fatalf("node tests failed: %v", err)
	}
}

// TestLiveCounter: the example app's latency compensation (pending likes shown once).
func TestLiveCounter(t *testing.T) { runNodeTests(t, "test/live-counter.test.mjs") }

// TestFirebaseJSSDK: the JS SDK against the stack with firestore.rules: a roll-up listener follows
// HTTP increments, and every other client read or write is denied; the guide's incrementCounter
// under firestore.guide-clients.rules may increment shards by one and do nothing else.
func TestFirebaseJSSDK(t *testing.T) {
	runNodeTests(t, "test/sdk.test.mjs", "test/guide.test.mjs")
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
