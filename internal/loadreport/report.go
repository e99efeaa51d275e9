// Package loadreport turns what a load run observed into a report's figures, rendered as JSON,
// Markdown and SVG plots.
package loadreport

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/counters/internal/commitlog"
)

// Run is one configuration's load run as measured.
type Run struct {
	Name      string            `json:"name"`
	Mode      string            `json:"mode"` // e.g. "guide", "group-commit"
	Via       string            `json:"via"`  // "http" or "pubsub"
	Instances int               `json:"instances"`
	Settings  map[string]string `json:"settings"`
	// Start to End (roll-ups settled) is the span the timeline and commit figures cover.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Duration is how long clients sent (Pub/Sub: until the burst was counted).
	Duration time.Duration `json:"duration_ns"`

	// Offered increments ended Acknowledged, Unknown or NotApplied; retries count once.
	Offered      int64            `json:"offered"`
	Acknowledged int64            `json:"acknowledged"`
	Unknown      int64            `json:"unknown"`
	NotApplied   int64            `json:"not_applied"`
	Retries      int64            `json:"retries"`
	Answers      map[string]int64 `json:"answers"` // every attempt's answer, by kind
	// IncrementsPerSecond is Acknowledged/Duration (Pub/Sub: counted per second until drained).
	IncrementsPerSecond float64 `json:"increments_per_second"`
	// Drain is, for Pub/Sub, the first publish until all were counted (0: never).
	Drain time.Duration `json:"drain_ns,omitempty"`
	// Latency of acknowledged increments, from the first attempt.
	LatencyP50 time.Duration `json:"latency_p50_ns"`
	LatencyP99 time.Duration `json:"latency_p99_ns"`
	LatencyMax time.Duration `json:"latency_max_ns"`

	// Per1000 figures are per 1,000 acknowledged increments.
	CommitsPer1000        float64 `json:"commits_per_1000"`
	DocumentsPer1000      float64 `json:"documents_per_1000"`
	Hottest1s             DocRate `json:"hottest_1s"`
	Hottest10s            DocRate `json:"hottest_10s"`
	HottestShard1s        DocRate `json:"hottest_shard_1s"`
	HottestShard10s       DocRate `json:"hottest_shard_10s"`
	HottestRollup1s       DocRate `json:"hottest_rollup_1s"`
	HottestRollup10s      DocRate `json:"hottest_rollup_10s"`
	RollupWritesPerSecond float64 `json:"rollup_writes_per_second"` // per counter
	// Staleness is now - updated_at; TrailingEdge is from the last acknowledgement until exact.
	StalenessP50 time.Duration `json:"staleness_p50_ns"`
	StalenessP99 time.Duration `json:"staleness_p99_ns"`
	StalenessMax time.Duration `json:"staleness_max_ns"`
	TrailingEdge time.Duration `json:"trailing_edge_ns"`
	// RollupAge is the age of the oldest acknowledged increment a roll-up does not show.
	RollupAgeP50 time.Duration `json:"rollup_age_p50_ns"`
	RollupAgeP99 time.Duration `json:"rollup_age_p99_ns"`
	RollupAgeMax time.Duration `json:"rollup_age_max_ns"`
	// Negative: not reported by the stack.
	RollupInvocationsPer1000     float64 `json:"rollup_invocations_per_1000"`
	RollupInstanceSecondsPer1000 float64 `json:"rollup_instance_seconds_per_1000"`
	// RollupAnswer and EventDelay (write to event bridge) are p50, p99, max; zero if unreported.
	RollupAnswer        [3]time.Duration `json:"rollup_answer_ns"`
	EventDelay          [3]time.Duration `json:"event_delay_ns"`
	LogBytesPer1000     float64          `json:"log_bytes_per_1000"`
	FinalShards         int              `json:"final_shards"` // largest num_shards
	RequestsPerInstance []int64          `json:"requests_per_instance,omitempty"`
	Faults              *FaultCounts     `json:"faults,omitempty"`
	Killed              bool             `json:"killed"` // a functions process was killed

	// Outcomes total the counters'; ExactCheck explains them.
	Outcomes       Outcomes `json:"outcomes"`
	ExactCheck     string   `json:"exact_check"`
	ExactCheckPass bool     `json:"exact_check_pass"`

	Timeline []Second `json:"timeline"`

	// Documents, when set, replaces the increments' figures in the report.
	Documents *Documents `json:"documents,omitempty"`
}

// FaultCounts are the fault proxy's counts during the load.
type FaultCounts struct {
	Spec             string `json:"spec"` // e.g. "reset=0.02,drop=0.01"
	Connections      int64  `json:"connections"`
	Resets           int64  `json:"resets"`
	DroppedResponses int64  `json:"dropped_responses"`
	Eligible         int64  `json:"eligible"` // client chunks a fault could pick
}

// Second is one second of a run's timeline.
type Second struct {
	T            int   `json:"t"`
	Offered      int64 `json:"offered"`      // Pub/Sub: published
	Acknowledged int64 `json:"acknowledged"` // Pub/Sub: counted
	Shards       int   `json:"shards"`       // largest num_shards
	// Hottest1s is the most writes to one document this second; Hottest10s over the last 10 s.
	Hottest1s  float64 `json:"hottest_1s"`
	Hottest10s float64 `json:"hottest_10s"`
}

// Percentile is the p-th percentile (0..1) of ds, 0 when empty.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// CountCommits fills r's commit figures from commits in [from, to), and its timeline's hottest
// columns; the timeline must already span the run.
func (r *Run) CountCommits(commits []commitlog.Commit, from, to time.Time, rollupsPrefix, shardsMarker string, counters int) {
	var nCommits, nDocs, rollupWrites int
	for _, c := range commits {
		if c.Time.Before(from) || !c.Time.Before(to) {
			continue
		}
		nCommits++
		nDocs += len(c.Docs)
		for _, d := range c.Docs {
			if strings.HasPrefix(d, rollupsPrefix) {
				rollupWrites++
			}
		}
	}
	if r.Acknowledged > 0 {
		r.CommitsPer1000 = 1000 * float64(nCommits) / float64(r.Acknowledged)
		r.DocumentsPer1000 = 1000 * float64(nDocs) / float64(r.Acknowledged)
	}
	rates := NewWriteRates(commits, from, to)
	isShard := func(d string) bool { return strings.Contains(d, shardsMarker) }
	isRollup := func(d string) bool { return strings.HasPrefix(d, rollupsPrefix) }
	r.Hottest1s, r.Hottest10s = rates.Hottest(1, nil), rates.Hottest(10, nil)
	r.HottestShard1s, r.HottestShard10s = rates.Hottest(1, isShard), rates.Hottest(10, isShard)
	r.HottestRollup1s, r.HottestRollup10s = rates.Hottest(1, isRollup), rates.Hottest(10, isRollup)
	each1s, each10s := rates.HottestEachSecond(1, nil), rates.HottestEachSecond(10, nil)
	for i := range r.Timeline {
		if i < len(each1s) {
			r.Timeline[i].Hottest1s, r.Timeline[i].Hottest10s = each1s[i], each10s[i]
		}
	}
	if span := to.Sub(from).Seconds(); span > 0 && counters > 0 {
		r.RollupWritesPerSecond = float64(rollupWrites) / span / float64(counters)
	}
}

// Report is the side-by-side result of one invocation.
type Report struct {
	Command string             `json:"command"` // reproduces the run
	Runs    []Run              `json:"runs"`
	Ratios  map[string]float64 `json:"ratios"`
}

// Compare fills Ratios, comparing the last run with the first.
func (rep *Report) Compare() {
	if len(rep.Runs) < 2 || rep.Runs[0].Documents != nil {
		return
	}
	base, cur := rep.Runs[0], rep.Runs[len(rep.Runs)-1]
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	rep.Ratios = map[string]float64{
		"documents_written_fewer_x":    ratio(base.DocumentsPer1000, cur.DocumentsPer1000),
		"commits_fewer_x":              ratio(base.CommitsPer1000, cur.CommitsPer1000),
		"throughput_x":                 ratio(cur.IncrementsPerSecond, base.IncrementsPerSecond),
		"hottest_shard_writes_fewer_x": ratio(base.HottestShard1s.WritesPerSecond, cur.HottestShard1s.WritesPerSecond),
		"latency_p99_x":                ratio(float64(cur.LatencyP99), float64(base.LatencyP99)),
	}
}

// Passed says whether every run's exact check passed.
func (rep *Report) Passed() bool {
	for _, r := range rep.Runs {
		if !r.ExactCheckPass {
			return false
		}
	}
	return true
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// rate formats a document's rate with its path.
func rate(d DocRate) string {
	if d.Document == "" {
		return "0"
	}
	return fmt.Sprintf("%.1f (%s)", d.WritesPerSecond, d.Document)
}

// rows are the Markdown table's rows.
var rows = []struct {
	name string
	cell func(Run) string
}{
	{"increments offered / acknowledged", func(r Run) string { return fmt.Sprintf("%d / %d", r.Offered, r.Acknowledged) }},
	{"unknown outcome / certainly not applied", func(r Run) string { return fmt.Sprintf("%d / %d", r.Unknown, r.NotApplied) }},
	{"retries (attempts after the first)", func(r Run) string { return fmt.Sprint(r.Retries) }},
	{"answers", func(r Run) string { return answers(r.Answers) }},
	{"acknowledged increments/s (Pub/Sub: drained messages/s)", func(r Run) string {
		if r.Drain > 0 {
			return fmt.Sprintf("%.0f (drained in %.1f s)", r.IncrementsPerSecond, r.Drain.Seconds())
		}
		return fmt.Sprintf("%.0f", r.IncrementsPerSecond)
	}},
	{"latency p50 / p99 / max", func(r Run) string { return ms(r.LatencyP50) + " / " + ms(r.LatencyP99) + " / " + ms(r.LatencyMax) }},
	{"Firestore commits per 1,000 increments", func(r Run) string { return fmt.Sprintf("%.1f", r.CommitsPer1000) }},
	{"documents written per 1,000 increments", func(r Run) string { return fmt.Sprintf("%.1f", r.DocumentsPer1000) }},
	{"hottest document, writes/s, 1 s window", func(r Run) string { return rate(r.Hottest1s) }},
	{"hottest document, writes/s, 10 s window", func(r Run) string { return rate(r.Hottest10s) }},
	{"hottest shard, writes/s, 1 s / 10 s window", func(r Run) string {
		return fmt.Sprintf("%.1f / %.1f", r.HottestShard1s.WritesPerSecond, r.HottestShard10s.WritesPerSecond)
	}},
	{"hottest roll-up, writes/s, 1 s / 10 s window", func(r Run) string {
		return fmt.Sprintf("%.1f / %.1f", r.HottestRollup1s.WritesPerSecond, r.HottestRollup10s.WritesPerSecond)
	}},
	{"roll-up writes/s per counter (mean)", func(r Run) string { return fmt.Sprintf("%.2f", r.RollupWritesPerSecond) }},
	{"roll-up staleness p50 / p99 / max", func(r Run) string {
		return ms(r.StalenessP50) + " / " + ms(r.StalenessP99) + " / " + ms(r.StalenessMax)
	}},
	{"roll-up age across counters p50 / p99 / max", func(r Run) string {
		return ms(r.RollupAgeP50) + " / " + ms(r.RollupAgeP99) + " / " + ms(r.RollupAgeMax)
	}},
	{"roll-up trigger invocations per 1,000 increments", func(r Run) string { return perThousand(r.RollupInvocationsPer1000, "%.0f") }},
	{"roll-up trigger instance-seconds per 1,000 increments", func(r Run) string { return perThousand(r.RollupInstanceSecondsPer1000, "%.2f") }},
	{"roll-up trigger answer time p50 / p99 / max", func(r Run) string { return triple(r.RollupAnswer) }},
	{"Firestore event delay from the write p50 / p99 / max", func(r Run) string { return triple(r.EventDelay) }},
	{"functions' log bytes per 1,000 increments", func(r Run) string { return fmt.Sprintf("%.0f", r.LogBytesPer1000) }},
	{"roll-up exact after the load stopped", func(r Run) string {
		if r.TrailingEdge < 0 {
			return "not within 1 min"
		}
		return ms(r.TrailingEdge)
	}},
	{"shard count at the end (largest)", func(r Run) string { return fmt.Sprint(r.FinalShards) }},
	{"requests per instance (every function)", func(r Run) string {
		if len(r.RequestsPerInstance) == 0 {
			return "-"
		}
		return strings.Trim(fmt.Sprint(r.RequestsPerInstance), "[]")
	}},
	{"faults: connections / resets / dropped responses", func(r Run) string {
		if r.Faults == nil {
			return "no proxy"
		}
		return fmt.Sprintf("%d / %d / %d", r.Faults.Connections, r.Faults.Resets, r.Faults.DroppedResponses)
	}},
	{"exact count check", func(r Run) string {
		mark := "FAIL"
		if r.ExactCheckPass {
			mark = "ok"
		}
		return mark + ": " + r.ExactCheck
	}},
}

// answers renders answer counts, most frequent first.
func answers(m map[string]int64) string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if m[a] != m[b] {
			return int(m[b] - m[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// WriteMarkdown renders the report; plotFile, if not nil, names run i's plot relative to it.
func (rep *Report) WriteMarkdown(w io.Writer, plotFile func(run int) string) error {
	var b strings.Builder
	names := make([]string, len(rep.Runs))
	for i, r := range rep.Runs {
		names[i] = r.Name
	}
	if len(rep.Runs) > 0 && rep.Runs[0].Documents != nil {
		fmt.Fprintf(&b, "Command: `%s`\n\n", rep.Command)
		writeDocumentsTable(&b, rep.Runs)
		for i, r := range rep.Runs {
			writeTimeline(&b, i, r, plotFile)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "Command: `%s`\n\n| | %s |\n|---|%s\n", rep.Command, strings.Join(names, " | "), strings.Repeat("---|", len(rep.Runs)))
	for _, row := range rows {
		cells := make([]string, len(rep.Runs))
		for i, r := range rep.Runs {
			cells[i] = row.cell(r)
		}
		fmt.Fprintf(&b, "| %s | %s |\n", row.name, strings.Join(cells, " | "))
	}
	if len(rep.Ratios) > 0 {
		names := make([]string, 0, len(rep.Ratios))
		for name := range rep.Ratios {
			names = append(names, name)
		}
		slices.Sort(names)
		b.WriteString("\nRatios (" + rep.Runs[0].Name + " vs " + rep.Runs[len(rep.Runs)-1].Name + "):\n\n")
		for _, name := range names {
			fmt.Fprintf(&b, "- %s: %.2f\n", name, rep.Ratios[name])
		}
	}
	if len(rep.Runs) > 1 {
		writeSideBySide(&b, rep.Runs)
	}
	for i, r := range rep.Runs {
		writeTimeline(&b, i, r, plotFile)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTimeline renders run i's timeline.
func writeTimeline(b *strings.Builder, i int, r Run, plotFile func(run int) string) {
	fmt.Fprintf(b, "\n### Timeline: %s\n\n", r.Name)
	if plotFile != nil {
		fmt.Fprintf(b, "![%s](%s)\n\n", r.Name, plotFile(i))
	}
	b.WriteString("| s | offered/s | acknowledged/s | shards | hottest doc writes, 1 s | hottest doc writes/s, 10 s |\n|---|---|---|---|---|---|\n")
	for _, s := range r.Timeline {
		fmt.Fprintf(b, "| %d | %d | %d | %d | %.0f | %.1f |\n", s.T, s.Offered, s.Acknowledged, s.Shards, s.Hottest1s, s.Hottest10s)
	}
}

// writeSideBySide renders the runs' timelines in one table, a column per run.
func writeSideBySide(b *strings.Builder, runs []Run) {
	b.WriteString("\n### Side by side, second by second\n\nEach cell: acknowledged/s · hottest document writes in that second · its writes/s over the last 10 s · shards.\n\n| s |")
	seconds := 0
	for _, r := range runs {
		fmt.Fprintf(b, " %s |", r.Name)
		seconds = max(seconds, len(r.Timeline))
	}
	fmt.Fprintf(b, "\n|---|%s\n", strings.Repeat("---|", len(runs)))
	for i := range seconds {
		fmt.Fprintf(b, "| %d |", i)
		for _, r := range runs {
			if i >= len(r.Timeline) {
				b.WriteString(" |")
				continue
			}
			s := r.Timeline[i]
			fmt.Fprintf(b, " %d · %.0f · %.1f · %d |", s.Acknowledged, s.Hottest1s, s.Hottest10s, s.Shards)
		}
		b.WriteString("\n")
	}
}

// perThousand formats a per-1,000 figure, "-" when negative (not measured).
func perThousand(v float64, format string) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// triple formats a p50, p99 and max in milliseconds.
func triple(d [3]time.Duration) string { return ms(d[0]) + " / " + ms(d[1]) + " / " + ms(d[2]) }
