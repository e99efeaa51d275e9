package functions_test

import (
	"testing"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/config"
)

// TestFirestoreTriggerMatchesWhatTheFunctionParses: the deployed Firestore trigger's document
// pattern is the shard path RollupOnShardWrite reads its counter from, whatever the collection.
func TestFirestoreTriggerMatchesWhatTheFunctionParses(t *testing.T) {
	f, ok := functions.DeployedFunction(functions.EntryRollupOnShardWrite)
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
	for _, f := range functions.Deployed() {
		if seen[f.EntryPoint] || seen[f.Name] {
			t.Errorf("%s (%s) is deployed twice", f.EntryPoint, f.Name)
		}
		seen[f.EntryPoint], seen[f.Name] = true, true
		if _, ok := functions.Handler(f.EntryPoint); !ok {
			t.Errorf("%s is deployed but has no handler", f.EntryPoint)
		}
	}
}
