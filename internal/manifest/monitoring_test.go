package manifest_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/version"
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
		case strings.HasPrefix(value, `"`):
			return value == strconv.Quote(service)
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
// named by SourceFunctions), and no other service; but the 429 alert leaves out the scheduled sweep
// (which turns away overlapping ticks by design), and Increment's own alerts and SLO select it alone.
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
	increment, _ := manifest.DeployedFunction(functions.EntryIncrement)
	sweep, _ := manifest.DeployedFunction(functions.EntryRollupScheduled)
	only := map[string][]string{"alert increment_5xx": {increment.Name}, "alert outcome_unknown": {increment.Name}, "alert increment_refused": {increment.Name}}
	leftOut := map[string][]string{"alert max_instances": {sweep.Name}}
	filters := map[string]string{}
	for _, p := range manifest.AlertPolicies() {
		filters["alert "+p.Key] = p.Filter
	}
	for _, slo := range (manifest.Monitoring{}).SLOs() {
		filters["SLO "+slo.ID] = slo.Total
		if strings.Contains(slo.Total, `metric.type="run.googleapis.com/`) {
			only["SLO "+slo.ID] = []string{increment.Name}
		}
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
			want := !slices.Contains(leftOut[name], s) && (only[name] == nil || slices.Contains(only[name], s))
			if got := serviceSelected(t, filter, s); got != want {
				t.Errorf("%s: selects the function %s: %t, want %t: %s", name, s, got, want, filter)
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

// headingAnchors are the anchors GitHub gives the headings of a Markdown file.
func headingAnchors(t *testing.T, file string) []string {
	t.Helper()
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return anchorsOf(string(doc))
}

// anchorsOf are the anchors GitHub gives the headings of Markdown doc.
func anchorsOf(doc string) []string {
	var anchors []string
	for _, line := range strings.Split(doc, "\n") {
		if heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			var b strings.Builder
			for _, r := range strings.ToLower(heading) {
				switch {
				case r == ' ':
					b.WriteRune('-')
				case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
					b.WriteRune(r)
				}
			}
			anchors = append(anchors, b.String())
		}
	}
	return anchors
}

// TestEveryAlertIsActionable: every alert policy has a severity, notifies the paging or the ticket
// channels (dead letters and unfinished sweeps open tickets), holds its condition for a while or
// needs two windows to agree, and links its runbook: a section of docs/operations.md in this
// release's source.
func TestEveryAlertIsActionable(t *testing.T) {
	anchors := headingAnchors(t, "../../docs/operations.md")
	for _, p := range manifest.AlertPolicies() {
		if !slices.Contains([]string{"CRITICAL", "ERROR", "WARNING"}, p.Severity) {
			t.Errorf("%s: severity %q, want CRITICAL, ERROR or WARNING", p.Key, p.Severity)
		}
		if p.Notify != manifest.Page && p.Notify != manifest.Ticket {
			t.Errorf("%s: notifies %q, want page or ticket", p.Key, p.Notify)
		}
		if !p.Absent && !p.LogMatch && p.Duration <= 0 {
			t.Errorf("%s: a threshold that fires at once (duration 0): one sample pages", p.Key)
		}
		if len(p.BurnWindows) == 1 {
			t.Errorf("%s: a burn rate over one window; want a long and a short one that must agree", p.Key)
		}
		if !slices.Contains(anchors, p.Runbook) {
			t.Errorf("%s: runbook %q is no heading of docs/operations.md", p.Key, p.Runbook)
		}
		if link := version.DocURL("docs/operations.md#" + p.Runbook); !strings.HasSuffix(p.Documentation, link) {
			t.Errorf("%s: documentation does not end with its runbook link %s: %q", p.Key, link, p.Documentation)
		}
	}
	for _, key := range []string{"dead_letter_backlog", "sweep_unfinished"} {
		i := slices.IndexFunc(manifest.AlertPolicies(), func(p manifest.AlertPolicy) bool { return p.Key == key })
		if i < 0 || manifest.AlertPolicies()[i].Notify != manifest.Ticket {
			t.Errorf("%s: want a ticket, not a page", key)
		}
	}
}

// TestAlertThresholdsAreReachable: every threshold is one its documented cause reaches: a count over
// the window is below what the cause's rate makes in that window; a share, seconds or a burn rate
// is below the most the cause makes (CauseMax; a burn rate's is 1/(1-goal), every request failing).
// A ratio of Increment's answers (or their SLO's burn rate) fires only over more requests than
// MinRequests, so that at the default threshold at least manifest.MinFailures requests failed.
func TestAlertThresholdsAreReachable(t *testing.T) {
	goals := map[string]float64{}
	monitoring := manifest.Monitoring{Project: manifest.ProjectPlaceholder}
	for _, slo := range monitoring.SLOs() {
		goals[monitoring.SLOName(slo.ID)] = slo.Goal
	}
	for _, p := range manifest.AlertPolicies() {
		if p.LogMatch || p.Absent {
			continue // no threshold of events: TestSweepAbsenceAlertOutlastsTheSchedule
		}
		failing := p.Threshold // the share of requests failing at the threshold
		switch {
		case p.CausePerMinute > 0 && p.CauseMax == 0:
			if p.Aligner != "ALIGN_SUM" || p.Denominator != "" {
				t.Errorf("%s: a cause rate for a condition that counts nothing (%s, denominator %q)", p.Key, p.Aligner, p.Denominator)
			}
			if inWindow := math.Floor(p.CausePerMinute * p.Period.Minutes()); inWindow <= p.Threshold {
				t.Errorf("%s: its cause makes at most %g in %v, never more than the threshold %g", p.Key, inWindow, p.Period, p.Threshold)
			}
		case p.CauseMax > 0 && p.CausePerMinute == 0:
			if p.Threshold >= p.CauseMax {
				t.Errorf("%s: threshold %g, but its cause reaches %g at most", p.Key, p.Threshold, p.CauseMax)
			}
			if goal, ok := goals[p.SLOName]; ok {
				if want := 1 / (1 - goal); math.Abs(p.CauseMax-want) > 1e-9 {
					t.Errorf("%s: a burn rate's cause reaches 1/(1-goal) = %g, not %g", p.Key, want, p.CauseMax)
				}
				failing = p.Threshold * (1 - goal)
			}
		default:
			t.Errorf("%s: want either a cause's rate per minute or its maximum, got %g and %g", p.Key, p.CausePerMinute, p.CauseMax)
		}
		ratio := p.Denominator != "" || strings.Contains(p.Requests, "request_count")
		if !ratio {
			continue
		}
		if p.MinRequests*failing < manifest.MinFailures-1e-9 {
			t.Errorf("%s: over %g requests at a failing share of %g, %g failures fire it; want at least %d", p.Key, p.MinRequests, failing, p.MinRequests*failing, manifest.MinFailures)
		}
		if p.Denominator != "" && p.Requests != p.Denominator {
			t.Errorf("%s: its minimum counts %q, its ratio's denominator is %q", p.Key, p.Requests, p.Denominator)
		}
		if p.FloorWindow() != p.Period && (len(p.BurnWindows) == 0 || p.FloorWindow() != p.BurnWindows[len(p.BurnWindows)-1]) {
			t.Errorf("%s: its minimum counts over %v, not its window", p.Key, p.FloorWindow())
		}
	}
	for _, key := range []string{"increment_5xx", "outcome_unknown", "increment_refused", "availability_burn_fast", "availability_burn_slow", "availability_budget"} {
		i := slices.IndexFunc(manifest.AlertPolicies(), func(p manifest.AlertPolicy) bool { return p.Key == key })
		if i < 0 || manifest.AlertPolicies()[i].MinRequests <= 0 {
			t.Errorf("%s: a ratio of Increment's answers without a minimum request count", key)
		}
	}
}

// TestLinksResolveAtTheirRelease: every link into this repository's source that the deploy files
// hold (both paths' alert policies and dashboard) or the docs hold names the release the code
// declares (tag v<version.Version>), and its anchor is a heading of that file both in the tree and
// at the release commit (the first to set version.Version, as operations.md's release function
// finds it). A runbook renamed or added after a release fails it until the next release.
func TestLinksResolveAtTheirRelease(t *testing.T) {
	const root = "../.."
	var files []string
	for _, pattern := range []string{"scripts/monitoring/*/*.json", "scripts/monitoring/*.json", "terraform/*.json", "README.md", "docs/*.md"} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	release, _, _ := strings.Cut(git("log", "--reverse", "--format=%H", "-S", `Version = "`+version.Version+`"`, "--", "version/version.go"), "\n")
	if release == "" {
		t.Fatalf("no commit sets version.Version %q: a release is the commit that sets it (docs/operations.md)", version.Version)
	}
	link := regexp.MustCompile(regexp.QuoteMeta(version.Repository+"/blob/") + `([^/\s"]+)/([^#\s"\\)]+)(?:#([A-Za-z0-9_-]+))?`)
	anchors := map[string][]string{} // by path, then "@release" + path
	checked := 0
	for _, file := range files {
		content, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(content), -1) {
			checked++
			ref, path, anchor := m[1], m[2], m[3]
			if ref != "v"+version.Version {
				t.Errorf("%s links %s at %s, not at this release's tag v%s", file, path, ref, version.Version)
			}
			if _, ok := anchors[path]; !ok {
				anchors[path] = headingAnchors(t, filepath.Join(root, path))
				anchors["@release "+path] = anchorsOf(git("show", release+":"+path))
			}
			if anchor == "" {
				continue
			}
			if !slices.Contains(anchors[path], anchor) {
				t.Errorf("%s links %s#%s: no such heading in the tree", file, path, anchor)
			}
			if !slices.Contains(anchors["@release "+path], anchor) {
				t.Errorf("%s links %s#%s: no such heading at the release commit %.12s of v%s; release again (docs/operations.md, \"Upgrading and rolling back\")",
					file, path, anchor, release, version.Version)
			}
		}
	}
	if checked == 0 {
		t.Error("no link into the repository's source found: nothing checked")
	}
}
