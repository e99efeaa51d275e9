package deploycheck_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/manifest"
)

// root is the repository, seen from this package's folder.
const root = "../.."

var script = filepath.Join(root, "scripts", "deploy.sh")

// flags maps each --flag of words to its values, in order; a flag without a value maps to [""].
func flags(words []string) map[string][]string {
	f := map[string][]string{}
	for _, w := range words {
		if strings.HasPrefix(w, "--") {
			name, value, _ := strings.Cut(w, "=")
			f[name] = append(f[name], value)
		}
	}
	return f
}

// TestDryRunDeploysEachDeclaredFunctionOnce: with every documented option combination, deploy.sh
// deploys each function of manifest.Deployed exactly once (an opt-in one only when --opt-in names
// it), with its entry point, trigger and limits, and gives it only variables that functions/config
// declares.
func TestDryRunDeploysEachDeclaredFunctionOnce(t *testing.T) {
	requireBash(t)
	useSources(t, "[]") // the functions of counter sources: TestDryRunDeploysOneFunctionPerDeclaredPattern
	known := map[string]bool{}
	for _, s := range config.Settings() {
		known[s.Name] = true
	}
	for _, options := range scriptOptions {
		t.Run(strings.Join(options, " "), func(t *testing.T) {
			commands, err := deploycheck.DryRun(script, append([]string{"--project", "p", "--region", "r"}, options...)...)
			if err != nil {
				t.Fatal(err)
			}
			deployed := map[string]int{}
			for _, words := range commands {
				if len(words) < 4 || strings.Join(words[:3], " ") != "gcloud functions deploy" {
					continue
				}
				name, got := words[3], flags(words)
				deployed[name]++
				i := slices.IndexFunc(manifest.Deployed(), func(f manifest.Function) bool { return f.Name == name })
				if i < 0 {
					t.Errorf("deploys %s, which manifest.Deployed does not declare", name)
					continue
				}
				f := manifest.Deployed()[i]
				want := map[string]string{"--entry-point": f.EntryPoint, "--memory": f.Memory, "--cpu": f.CPU,
					"--concurrency": fmt.Sprint(f.Concurrency), "--timeout": fmt.Sprintf("%ds", int(f.Timeout.Seconds())),
					"--max-instances": fmt.Sprint(f.MaxInstances), "--trigger-topic": f.Trigger.Topic}
				for flag, w := range want {
					if g := strings.Join(got[flag], ","); g != w {
						t.Errorf("%s: %s is %q, want %q", name, flag, g, w)
					}
				}
				if f.Trigger.FromRoot {
					if g, w := strings.Join(got["--trigger-event-filters-path-pattern"], ","), "document="+f.Trigger.Document; g != w {
						t.Errorf("%s: --trigger-event-filters-path-pattern is %q, want %q", name, g, w)
					}
				}
				if retry := len(got["--retry"]) > 0; retry != f.Trigger.Retry {
					t.Errorf("%s: --retry given %t, want %t", name, retry, f.Trigger.Retry)
				}
				for _, pair := range envPairs(strings.Join(got["--set-env-vars"], ",")) {
					if k, _, _ := strings.Cut(pair, "="); !known[k] {
						t.Errorf("%s: sets %s, which functions/config does not declare", name, k)
					}
				}
			}
			for _, f := range manifest.Deployed() {
				want := 1
				if f.OptIn && !slices.Contains(options, f.Name) || f.PerSource { // per pattern: sources_test.go
					want = 0
				}
				if slices.Contains(options, "--dead-letter-only") || slices.Contains(options, "--remove") {
					want = 0
				}
				if deployed[f.Name] != want {
					t.Errorf("deploys %s %d times, want %d", f.Name, deployed[f.Name], want)
				}
			}
		})
	}
}

// envPairs splits a --set-env-vars value into its NAME=VALUE pairs: on commas, or on the delimiter
// announced as ^DELIM^ (`gcloud topic escaping`; TestEnvValuesReachGcloudWhole reads it with gcloud).
func envPairs(value string) []string {
	if rest, ok := strings.CutPrefix(value, "^"); ok {
		if delim, list, ok := strings.Cut(rest, "^"); ok && delim != "" {
			return strings.Split(list, delim)
		}
	}
	return strings.Split(value, ",")
}

// TestUnknownVariablesAreRefused: a typo in a variable's name stops deploy.sh before it starts.
func TestUnknownVariablesAreRefused(t *testing.T) {
	requireBash(t)
	if _, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--env", "MAX_DELTAS=5"); err == nil || !strings.Contains(err.Error(), "MAX_DELTAS") {
		t.Errorf("deploy.sh accepted --env MAX_DELTAS=5: %v", err)
	}
}
