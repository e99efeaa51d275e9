package manifest_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/manifest"
)

// TestFirestoreTriggerMatchesWhatTheFunctionParses: the deployed Firestore trigger's document
// pattern is the shard path RollupOnShardWrite reads its counter from, whatever the collection.
func TestFirestoreTriggerMatchesWhatTheFunctionParses(t *testing.T) {
	f, ok := manifest.DeployedFunction(functions.EntryRollupOnShardWrite)
	if !ok {
		t.Fatal("RollupOnShardWrite is not deployed")
	}
	schema := config.Default().Schema()
	schema.Counters = "tally"
	if got, want := f.Trigger.DocumentPattern(schema), schema.ShardPathPattern(); got != want {
		t.Errorf("trigger document pattern %q, the function parses %q", got, want)
	}
}

// TestEveryEntryPointIsDeployedOnce: each registered entry point is one deployed function.
func TestEveryEntryPointIsDeployedOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range manifest.Deployed() {
		if seen[f.EntryPoint] || seen[f.Name] {
			t.Errorf("%s (%s) is deployed twice", f.EntryPoint, f.Name)
		}
		seen[f.EntryPoint], seen[f.Name] = true, true
		if _, ok := functions.Handler(f.EntryPoint); !ok {
			t.Errorf("%s is deployed but has no handler", f.EntryPoint)
		}
	}
}

// TestConcurrencyAboveOneHasAWholeVCPU: Cloud Run refuses a revision with less than 1 vCPU and a
// maximum concurrency above 1 ("If you use less than 1 vCPU ... Maximum concurrency must be set to
// 1", Cloud Run's CPU limits page), so a function declared that way could never be deployed.
func TestConcurrencyAboveOneHasAWholeVCPU(t *testing.T) {
	for _, f := range manifest.Deployed() {
		if f.Concurrency <= 1 {
			continue
		}
		if cpu, err := strconv.ParseFloat(f.CPU, 64); err != nil || cpu < 1 {
			t.Errorf("%s: concurrency %d with vCPU %q (the platform's default, below 1 at %s, when empty): Cloud Run needs 1 vCPU or more, or concurrency 1",
				f.Name, f.Concurrency, f.CPU, f.Memory)
		}
	}
}

// TestTriggerPeriodReadsEveryNMinutes: a schedule of every N minutes gives N minutes between runs;
// any other form is an error that names it, not a guess.
func TestTriggerPeriodReadsEveryNMinutes(t *testing.T) {
	for schedule, want := range map[string]time.Duration{
		"* * * * *": time.Minute, "*/5 * * * *": 5 * time.Minute, "*/59  * * * *": 59 * time.Minute,
		"0 * * * *": 0, "*/0 * * * *": 0, "*/60 * * * *": 0, "* * * * * *": 0, "*/5 9-17 * * *": 0, "": 0,
	} {
		got, err := manifest.Trigger{Topic: "t", Schedule: schedule}.Period()
		if got != want || (err == nil) != (want != 0) || err != nil && !strings.Contains(err.Error(), strconv.Quote(schedule)) {
			t.Errorf("schedule %q: period %v, error %v; want %v", schedule, got, err, want)
		}
	}
}
