package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/loadreport"
	"github.com/shardcount/counters/internal/testenv"
)

// localstackBinary is the local stack built once for this package's tests.
var localstackBinary string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() { // every test that runs a stack skips under -short (testenv)
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	localstackBinary = filepath.Join(dir, "localstack")
	if out, err := exec.Command("go", "build", "-o", localstackBinary, "github.com/shardcount/counters/cmd/localstack").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build localstack: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testOptions are short-run options on the package's local stack binary. Each run starts its own
// stack (and emulators); the emulators must be installed, as `make test` makes sure.
func testOptions(t *testing.T) options {
	t.Helper()
	testenv.FirestoreEmulatorHost(t)
	return options{clients: 16, duration: 4 * time.Second, spread: spread{counters: 1}, shards: 5, localstack: localstackBinary,
		messages: 300, drainTimeout: 2 * time.Minute}
}

// runForTest runs p and logs what the report would say about it.
func runForTest(t *testing.T, o options, p plan) loadreport.Run {
	t.Helper()
	run, err := runPlan(context.Background(), o, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s; answers %v; per instance %v; faults %+v; drained in %s", run.Name, run.ExactCheck, run.Answers, run.RequestsPerInstance, run.Faults, run.Drain)
	return run
}

func TestAdaptiveModeLeavesTheShardCountToTheRollup(t *testing.T) {
	// With min_shards, num_shards is where an adaptive counter starts (docs/api.md); without it, a
	// new counter would start at DEFAULT_NUM_SHARDS however few shards the run asked for.
	if got := counterSettings("adaptive", "c", 2, nil); got["min_shards"] != 2 || got["num_shards"] != 2 {
		t.Errorf("adaptive mode configures %v; want min_shards 2 and num_shards 2 to start from", got)
	}
	if got := counterSettings("group-commit", "c", 10, nil); got["num_shards"] != 10 || got["windows"] != nil {
		t.Errorf("group-commit mode configures %v; want num_shards 10 (pinned), no windows", got)
	}
}

// TestFunctionsLogBytesCountsOnlyTheFunctionsLines: the log volume counts the functions' JSON log
// lines, newline included, and none of the stack's own lines.
func TestFunctionsLogBytesCountsOnlyTheFunctionsLines(t *testing.T) {
	for line, want := range map[string]int64{
		`{"severity":"INFO","message":"increments applied","count":3}`: 61,
		`Serving function: "Increment"`:                                0,
		`ready project=p firestore=127.0.0.1:1`:                        0,
		`{"not":"a log line"}`:                                         0,
	} {
		if got := functionsLogBytes(line); got != want {
			t.Errorf("functionsLogBytes(%q) = %d, want %d", line, got, want)
		}
	}
}
