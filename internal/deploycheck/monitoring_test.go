package deploycheck_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardcount/counters/internal/deploycheck"
)

// monitoringFiles are the generated monitoring bodies deploy.sh sends (scripts/monitoring/).
func monitoringFiles(t *testing.T) []deploycheck.APIFile {
	t.Helper()
	var files []deploycheck.APIFile
	for kind, pattern := range map[string]string{"metric": "metrics/*.json", "policy": "policies/*.json", "dashboard": "dashboard.json",
		"service": "service.json", "slo": "slos/*.json"} {
		paths, err := filepath.Glob(filepath.Join(root, "scripts", "monitoring", pattern))
		if err != nil || len(paths) == 0 {
			t.Fatalf("scripts/monitoring/%s: none (%v)", pattern, err)
		}
		for _, p := range paths {
			files = append(files, deploycheck.APIFile{Kind: kind, Path: p})
		}
	}
	return files
}

// TestMonitoringBodiesAreAPIMessages: every log-based metric, alert policy, SLO, the SLO service and
// the dashboard that deploy.sh sends has only fields and enum values the APIs define, read by the installed gcloud's
// own message classes (Terraform's copy is checked against the provider's schema).
func TestMonitoringBodiesAreAPIMessages(t *testing.T) {
	requireGcloud(t)
	problems, err := deploycheck.APIMessageProblems(context.Background(), monitoringFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestAPIMessageCheckFindsUnknownFields: the check reports a misspelt field and an aligner the API
// does not have, in a threshold condition and in the metric-absence condition of sweep_absent.
func TestAPIMessageCheckFindsUnknownFields(t *testing.T) {
	requireGcloud(t)
	var files []deploycheck.APIFile
	for policy, typos := range map[string]*strings.Replacer{
		"rollup_age":   strings.NewReplacer(`"thresholdValue"`, `"thresholdValu"`, `"ALIGN_PERCENTILE_99"`, `"ALIGN_PERCENTILE_999"`),
		"sweep_absent": strings.NewReplacer(`"duration"`, `"duratio"`, `"ALIGN_SUM"`, `"ALIGN_SUMS"`),
	} {
		good, err := os.ReadFile(filepath.Join(root, "scripts", "monitoring", "policies", policy+".json"))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), policy+".json")
		if err := os.WriteFile(path, []byte(typos.Replace(string(good))), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, deploycheck.APIFile{Kind: "policy", Path: path})
	}
	problems, err := deploycheck.APIMessageProblems(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{
		"rollup_age.json: .conditions.conditionThreshold.thresholdValu ", "rollup_age.json: .conditions.conditionThreshold.aggregations.perSeriesAligner ",
		"sweep_absent.json: .conditions.conditionAbsent.duratio ", "sweep_absent.json: .conditions.conditionAbsent.aggregations.perSeriesAligner ",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the check does not report %q; it reports:\n%s", want, all)
		}
	}
}
