package manifest_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/manifest"
)

// monitoringSection is the "Monitoring" section of docs/operations.md.
func monitoringSection(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Monitoring\n")
	if !ok {
		t.Fatal("docs/operations.md has no Monitoring section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// tableKeys returns the first cells (code spans) of the rows of the table whose header starts with
// header.
func tableKeys(section, header string) []string {
	_, table, ok := strings.Cut(section, "\n"+header)
	if !ok {
		return nil
	}
	var keys []string
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		key, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		keys = append(keys, key)
	}
	return keys
}

// TestMonitoringDocsListWhatIsDeclared: operations.md's Monitoring tables list exactly the declared
// metrics and alert policies, in order, each alert with its default threshold.
func TestMonitoringDocsListWhatIsDeclared(t *testing.T) {
	section := monitoringSection(t)
	var metrics, alerts []string
	for _, m := range manifest.LogMetrics() {
		metrics = append(metrics, m.Name)
	}
	for _, p := range manifest.AlertPolicies() {
		alerts = append(alerts, p.Key)
		row := section[strings.Index(section, "| `"+p.Key+"` |")+1:]
		row, _, _ = strings.Cut(row, "\n")
		if want := fmt.Sprintf("more than %g", p.Threshold); !strings.Contains(row, want) && !strings.Contains(row, fmt.Sprintf("exceeds %g", p.Threshold)) {
			t.Errorf("the row of alert %s does not state its default threshold %g: %s", p.Key, p.Threshold, row)
		}
	}
	if got := tableKeys(section, "| Metric |"); strings.Join(got, " ") != strings.Join(metrics, " ") {
		t.Errorf("the metrics table lists %v, the declarations %v", got, metrics)
	}
	if got := tableKeys(section, "| Key |"); strings.Join(got, " ") != strings.Join(alerts, " ") {
		t.Errorf("the alerts table lists %v, the declarations %v", got, alerts)
	}
}

// TestSweepAbsenceAlertOutlastsTheSchedule: sweep_absent is a metric-absence condition on one series
// (summed over revisions and instances, so a new revision replacing the old one's series does not
// fire it) that waits 15 of the scheduler's periods, as the job is declared, in whole minutes from 2
// to 1410 (what Cloud Monitoring takes).
func TestSweepAbsenceAlertOutlastsTheSchedule(t *testing.T) {
	f, _ := manifest.DeployedFunction(functions.EntryRollupScheduled)
	period, err := f.Trigger.Period()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(manifest.AlertPolicies(), func(p manifest.AlertPolicy) bool { return p.Key == "sweep_absent" })
	if i < 0 {
		t.Fatal("no alert policy sweep_absent")
	}
	p := manifest.AlertPolicies()[i]
	if !p.Absent || p.Reducer != "REDUCE_SUM" || len(p.GroupBy) > 0 || p.Period > period {
		t.Errorf("sweep_absent: absent %t, reducer %s by %v, period %v; want a metric absence summed into one series, aligned over at most %v",
			p.Absent, p.Reducer, p.GroupBy, p.Period, period)
	}
	if got := p.AbsentFor(); got != 15*period || got%time.Minute != 0 || got < 2*time.Minute || got > 1410*time.Minute {
		t.Errorf("sweep_absent fires after %v without a sweep; want 15 periods of the schedule %q (%v), whole minutes from 2 to 1410", got, f.Trigger.Schedule, period)
	}
}

// serviceSelected evaluates the Cloud Run service term of a time series filter, as deployedServices
// writes it, for service: `resource.labels.service_name=one_of("a", "b")` or
// `resource.labels.service_name=starts_with("p")`, alone or ORed in parentheses. Any other service
// term fails the test.
func serviceSelected(t *testing.T, filter, service string) bool {
	t.Helper()
	var term string
	for _, part := range strings.Split(filter, " AND ") {
		if strings.Contains(part, "service_name") {
			term = part
		}
	}
	if term == "" {
		t.Fatalf("filter %s selects no Cloud Run service", filter)
	}
	if inner, ok := strings.CutPrefix(term, "("); ok {
		term = strings.TrimSuffix(inner, ")")
	}
	for _, comparison := range strings.Split(term, " OR ") {
		value, ok := strings.CutPrefix(comparison, "resource.labels.service_name=")
		switch {
		case !ok:
			t.Fatalf("filter %s: %q is not a comparison of resource.labels.service_name", filter, comparison)
		case strings.HasPrefix(value, "one_of(") && strings.HasSuffix(value, ")"):
			for _, name := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(value, "one_of("), ")"), ", ") {
				if name == strconv.Quote(service) {
					return true
				}
			}
		case strings.HasPrefix(value, "starts_with(") && strings.HasSuffix(value, ")"):
			prefix, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(value, "starts_with("), ")"))
			if err != nil {
				t.Fatalf("filter %s: %q: %v", filter, comparison, err)
			}
			if strings.HasPrefix(service, prefix) {
				return true
			}
		default:
			t.Fatalf("filter %s: %q is not one_of(...) or starts_with(...)", filter, value)
		}
	}
	return false
}

// TestCloudRunChartsAndAlertsSeeEveryFunction: every alert policy and dashboard line on a Cloud Run
// metric (429s, requests by response class, instances) selects the service of every deployed
// function, the count-documents functions of declared patterns included (one service per pattern,
// named by SourceFunctions), and no other service.
func TestCloudRunChartsAndAlertsSeeEveryFunction(t *testing.T) {
	var services []string
	for _, f := range manifest.Deployed() {
		if !f.PerSource {
			services = append(services, f.Name)
			continue
		}
		for _, g := range manifest.SourceFunctions(f, []string{"posts/{post}/likes/{like}", "shops/{shop}/orders/{order}"}) {
			services = append(services, g.Name)
		}
	}
	filters := map[string]string{}
	for _, p := range manifest.AlertPolicies() {
		filters["alert "+p.Key] = p.Filter
	}
	for _, c := range manifest.DashboardCharts() {
		for i, l := range c.Lines {
			filters[fmt.Sprintf("chart %q line %d", c.Title, i)] = l.Filter
		}
	}
	checked := 0
	for name, filter := range filters {
		if !strings.Contains(filter, `metric.type="run.googleapis.com/`) {
			continue
		}
		checked++
		for _, s := range services {
			if !serviceSelected(t, filter, s) {
				t.Errorf("%s: the filter leaves out the function %s: %s", name, s, filter)
			}
		}
		for _, other := range []string{"my-app-api", "count-documents", "counter"} {
			if serviceSelected(t, filter, other) {
				t.Errorf("%s: the filter selects the service %s, which is not ours: %s", name, other, filter)
			}
		}
	}
	if checked == 0 {
		t.Error("no alert or chart on a Cloud Run metric: nothing checked")
	}
}
