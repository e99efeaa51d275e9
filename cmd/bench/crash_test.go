package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/testenv"
)

// TestKillingTheFunctionsLosesNoAcknowledgedIncrement is the crash check: with group commit on, the
// functions process is killed (SIGKILL) in the middle of a load run and restarted by the stack's
// supervisor. Every acknowledged increment must be in the exact count; increments whose answer was
// lost may or may not be.
func TestKillingTheFunctionsLosesNoAcknowledgedIncrement(t *testing.T) {
	testenv.FirestoreEmulatorHost(t) // the emulators must be installed for this test to mean anything
	bin := filepath.Join(t.TempDir(), "localstack")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/shardcount/counters/cmd/localstack").CombinedOutput(); err != nil {
		t.Fatalf("build localstack: %v\n%s", err, out)
	}
	o := options{clients: 32, duration: 6 * time.Second, counters: 2, shards: 5, killAt: 2 * time.Second, localstack: bin}
	run, err := runMode(context.Background(), o, "group-commit")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", run.ExactCheck)
	if run.Failed == 0 {
		t.Fatalf("no increment failed: the functions process was not killed mid-run (%s)", run.ExactCheck)
	}
	if !run.ExactCheckPass {
		t.Errorf("acknowledged increments were lost in the crash: %s", run.ExactCheck)
	}
}
