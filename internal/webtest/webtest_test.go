package webtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/functionsproc"
	"github.com/shardcount/counters/internal/testenv"
)

// webDir is the npm project, from this package's directory.
var webDir = filepath.Join("..", "..", "web")

const (
	// perTest bounds each node test (its own timeout, so a stuck one fails by name), and runLimit a
	// whole node run: a run that outlives it is killed with everything it started and fails here,
	// with what it printed, instead of holding `make test` until go test's own timeout.
	perTest  = 3 * time.Minute
	runLimit = 6 * time.Minute
	// pipeGrace is how long Wait waits for the output pipe once node itself has ended.
	pipeGrace = 5 * time.Second
)

// runNodeTests runs node --test on files of web/test with the stack's environment, failing with
// node's report unless every test passes.
func runNodeTests(t *testing.T, files ...string) {
	t.Helper()
	testenv.Stack(t)
	runNodeTestsWith(t, nil, files...)
}

// runNodeTestsWith is runNodeTests with env added to the stack's environment.
func runNodeTestsWith(t *testing.T, env []string, files ...string) {
	t.Helper()
	runNodeTestsWithin(t, perTest, runLimit, env, files...)
}

// runNodeTestsWithin is runNodeTestsWith with its own limits: each test file (and test) within
// fileLimit, the whole run within limit.
func runNodeTestsWithin(t *testing.T, fileLimit, limit time.Duration, env []string, files ...string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: install Node.js 20 or later (these machines have it; .ci/run needs it)")
	}
	if _, err := os.Stat(filepath.Join(webDir, "node_modules", ".package-lock.json")); err != nil {
		t.Fatalf("web/node_modules is missing: run `make test`, which runs npm ci in web/ (%v)", err)
	}
	// --test-force-exit: once every test has ended, a handle left open (a client, a browser) cannot
	// keep the file's process, and so this run, alive.
	args := append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec", "--test-force-exit",
		fmt.Sprintf("--test-timeout=%d", fileLimit.Milliseconds())}, files...)
	out, err := runNode(webDir, limit, env, args...)
	t.Logf("node %v:\n%s", args, out)
	if err != nil {
		t.Fatalf("node tests: %v", err)
	}
}

// errRunLimit says a node run was killed for outliving its limit.
var errRunLimit = errors.New("did not finish in time: killed with its process group")

// runNode runs node with args in dir, with env added to this process's environment, and returns
// what it printed. A run that outlives limit is killed with its whole process group; a descendant
// that escaped the group and still holds the output pipe delays the return by at most pipeGrace.
func runNode(dir string, limit time.Duration, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
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
	out, err := runNode("testdata", 2*time.Second, nil, "hangs.mjs")
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

// TestFirebaseJSSDK: the JS SDK against the stack's rules (the counters' block): a roll-up listener follows
// HTTP increments, roll-ups may be listed 100 at most (returned and skipped by an offset together,
// offsets sent through REST), and every other client read or write is
// denied; the guide's incrementCounter under firestore.guide-clients.rules, signed in, may increment
// existing shards by one and do nothing else.
func TestFirebaseJSSDK(t *testing.T) {
	runNodeTests(t, "test/sdk.test.mjs", "test/guide.test.mjs")
}

// TestComposedRules: an app's ruleset (notes readable and writable by their owner only) with the
// counters' block added by cmd/rules, and with the extension block: the app's allows and denials
// are those of its rules alone, roll-ups are readable, counters and shards closed, and only small
// steps on UUID extension shards pass.
func TestComposedRules(t *testing.T) { runNodeTests(t, "test/compose.test.mjs") }

// TestFirestoreCounterExtensionClients: apps that ship the firestore-counter extension's clients,
// under firestore.extension-clients.rules: many clients at once, nested fields, two fields in one
// shard, folded exactly into the main document (other fields untouched) within about 2 s of the last
// write by FoldExtensionShards; every write but a small integer step of a counted field on the
// client's own UUID shard is denied; a shard under a missing document is deleted, no document created.
func TestFirestoreCounterExtensionClients(t *testing.T) {
	runNodeTests(t, "test/extension.test.mjs")
}

// TestFirestoreCounterExtensionWebClient: the extension's own web client, compiled from its unchanged
// public source, shows a live view that exceeds its own increments only while one of its writes is
// in flight, by at most what folds took from its shard meanwhile, and is exact once its writes are
// acknowledged. Its source is no registry's package and this machine reaches no other host, so the
// test runs only where FIRESTORE_COUNTER_WEB_CLIENT names a copy (docs/development.md says how).
func TestFirestoreCounterExtensionWebClient(t *testing.T) {
	if os.Getenv("FIRESTORE_COUNTER_WEB_CLIENT") == "" {
		t.Skip("FIRESTORE_COUNTER_WEB_CLIENT is not set: the extension's web client source is not on this machine (docs/development.md)")
	}
	runNodeTests(t, "test/extension-client.test.mjs")
}

// TestExampleAppInChromium: the live example app in headless Chromium, clicks included; the
// screenshot lands in web/test-results/example-app.png.
func TestExampleAppInChromium(t *testing.T) {
	requireChromium(t)
	runNodeTests(t, "test/browser.test.mjs")
}

// TestLikeDocumentsInChromium: likes kept as the app's own documents (posts/{post}/likes/{uid}),
// counted by the collection counter likes-{post}, in headless Chromium under the example app's
// rules with the counters' block (the stack's): pages of three users like and unlike through the
// Firebase JS SDK and the roll-up, Count and the page's listener follow the number of like documents
// exactly; a second like by the same user, a like in another's name and one with another field are
// refused and move nothing; a like made while the page is offline (IndexedDB persistence,
// context.setOffline) is not on the server until the page is back online, then counts exactly
// once; and the example app's post card likes and unlikes.
func TestLikeDocumentsInChromium(t *testing.T) {
	testenv.SkipIfShort(t, "Chromium and the local stack")
	requireChromium(t)
	runNodeTests(t, "test/likes.test.mjs")
}

// TestVotesByFieldInChromium (web/test/votes.test.mjs): in headless Chromium, two users vote on the
// example app's poll card; each choice's count (a counter per value of a field) follows the votes, a
// changed vote moves between the choices' counts, and the same vote again moves nothing.
func TestVotesByFieldInChromium(t *testing.T) {
	testenv.SkipIfShort(t, "Chromium and the local stack")
	requireChromium(t)
	runNodeTests(t, "test/votes.test.mjs")
}

// TestPagesOfListedOriginsIncrementInChromium: a functions process of the local stack with
// ALLOWED_ORIGINS naming the example app's origin (http://127.0.0.1:<port>) and REQUIRE_ID_TOKEN on;
// in headless Chromium, a page of that origin increments it through fetch with an ID token from the
// Auth emulator (a preflighted request) and reads the answers' headers; the same page served as
// http://localhost:<port>, another origin, is refused by the browser before the increment is sent.
func TestPagesOfListedOriginsIncrementInChromium(t *testing.T) {
	requireChromium(t)
	testenv.Stack(t) // the functions process below uses the stack's emulators (skips under -short)
	appURL, err := url.Parse(os.Getenv("LOCALSTACK_APP_URL"))
	if err != nil || appURL.Host == "" {
		t.Fatalf("LOCALSTACK_APP_URL=%q: not the example app's URL (%v)", os.Getenv("LOCALSTACK_APP_URL"), err)
	}
	functionsURL := functionsproc.Start(t, "ALLOWED_ORIGINS="+appURL.Scheme+"://"+appURL.Host, "REQUIRE_ID_TOKEN=true")
	runNodeTestsWith(t, []string{"LOCALSTACK_CORS_FUNCTIONS_URL=" + functionsURL}, "test/cors.test.mjs")
}

// TestWebClientRetryTable: the web client's increment plays client/testdata/retry-table.json, the
// table of answers the Go client's TestRetryTable plays too, through an injected fetch (no stack).
func TestWebClientRetryTable(t *testing.T) {
	testenv.SkipIfShort(t, "Node.js and web/node_modules")
	runNodeTestsWith(t, nil, "test/retry-table.test.mjs")
}

// TestWebClientAnswers: the web client's handling of answers the stack does not give (429, a 5xx
// saying not_applied, a refusal without JSON) and of cancelled increments, through an injected fetch.
func TestWebClientAnswers(t *testing.T) { runNodeTests(t, "test/client-answers.test.mjs") }

// TestWebClientInChromium: the web client module (web/client) in headless Chromium, through a fault
// proxy in front of the stack's Increment: a 503 storm is waited out per Retry-After and counts once;
// an answer lost (none, cut short, a 504) is resent under the same key and counts once; an outcome
// still unknown after the bound and a 4xx are errors of their own classes; tokens are attached; and
// liveCount, sampled at every change while answers are slow or lost and roll-ups arrive, never shows
// more than the increments sent.
func TestWebClientInChromium(t *testing.T) {
	requireChromium(t)
	runNodeTests(t, "test/client.test.mjs")
}

// TestWebClientPackageInAViteApp: the web client packed by npm pack (npm publish --dry-run passes)
// and installed into a fresh Vite app (web/fixtures/vite-app) per firebase major of its peer range:
// the package's metadata; every exported name type-checked by tsc under moduleResolution nodenext,
// node16 and bundler; per major, the production build holding one Firebase SDK, its pages in
// headless Chromium through vite preview against the stack (the count follows clicks, a refusal
// and an unreachable Firestore show in liveCount's error, the increment-only page loads no Firestore),
// then npm ci. npm installs web/'s firebase from the cache that `npm ci` in web/ filled, the other
// majors from the registry.
func TestWebClientPackageInAViteApp(t *testing.T) {
	testenv.SkipIfShort(t, "the local stack, npm and Chromium")
	requireChromium(t)
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatal("npm is not on PATH: install Node.js 20.19 or later with npm")
	}
	testenv.Stack(t)
	// Five npm installs, five production builds and four npm ci: minutes on a busy machine.
	runNodeTestsWithin(t, 10*time.Minute, 12*time.Minute, nil, "test/package.test.mjs")
}

// requireChromium skips t under -short; otherwise it fails t when there is no Chromium to drive.
func requireChromium(t *testing.T) {
	t.Helper()
	testenv.SkipIfShort(t, "Chromium and the local stack")
	path := os.Getenv("CHROMIUM_PATH")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no Chromium at %s: apt-get install chromium (.ci/run does), or set CHROMIUM_PATH", path)
	}
}
