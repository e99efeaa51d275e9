package main

import (
	"testing"
	"time"
)

// TestKillingTheFunctionsLosesNoAcknowledgedIncrement is the crash check: with group commit on, a
// functions process is killed (SIGKILL) in the middle of a load run and restarted by the stack's
// supervisor. Every acknowledged increment must be in the exact count once, and an increment whose
// answer was lost at most once: acknowledged <= exact <= acknowledged + unknown, for every counter.
// Half the clients are keyed and retry unknown outcomes with their key, as real clients should.
func TestKillingTheFunctionsLosesNoAcknowledgedIncrement(t *testing.T) {
	o := testOptions(t)
	o.clients, o.duration, o.counters, o.shards, o.killAt, o.keyedFraction = 32, 6*time.Second, 2, 5, 2*time.Second, 0.5
	run := runForTest(t, o, plan{via: "http", mode: "group-commit", instances: 1})
	if !run.Killed || run.Retries+run.Unknown == 0 {
		t.Fatalf("no increment was retried or left unknown: the functions process was not killed mid-run (%s, answers %v)", run.ExactCheck, run.Answers)
	}
	if !run.ExactCheckPass {
		t.Errorf("the crash lost or doubled increments: %s", run.ExactCheck)
	}
}
