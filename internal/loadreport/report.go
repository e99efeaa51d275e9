// Package loadreport turns what a load run observed (acknowledged increments and their latencies,
// roll-up ages, the commits the functions really made) into the figures of a load report, and
// renders reports as JSON and Markdown.
package loadreport

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/counters/internal/commitlog"
)

// Run is one mode's load run as measured.
type Run struct {
	// Mode names the configuration, e.g. "guide" or "group-commit".
	Mode string `json:"mode"`
	// Settings describes the load and the configuration.
	Settings map[string]string `json:"settings"`
	// Duration is how long clients sent increments.
	Duration time.Duration `json:"duration_ns"`
	// Acknowledged and Failed count answered increments (deltas are all 1).
	Acknowledged int64 `json:"acknowledged"`
	Failed       int64 `json:"failed"`
	// IncrementsPerSecond is Acknowledged / Duration.
	IncrementsPerSecond float64 `json:"increments_per_second"`
	// Latency of acknowledged increments.
	LatencyP50 time.Duration `json:"latency_p50_ns"`
	LatencyP99 time.Duration `json:"latency_p99_ns"`
	LatencyMax time.Duration `json:"latency_max_ns"`
	// CommitsPer1000 and DocumentsPer1000 are Firestore commits and documents written per 1,000
	// acknowledged increments, from the commit log.
	CommitsPer1000   float64 `json:"commits_per_1000"`
	DocumentsPer1000 float64 `json:"documents_per_1000"`
	// HottestDocument and HottestWritesPerSecond: the document written most often in one 1-second
	// window, and how often.
	HottestDocument        string `json:"hottest_document"`
	HottestWritesPerSecond int    `json:"hottest_writes_per_second"`
	// HottestShardWritesPerSecond is the same over shard documents only.
	HottestShardWritesPerSecond int `json:"hottest_shard_writes_per_second"`
	// RollupWritesPerSecond is roll-up document writes per second of the run, per counter.
	RollupWritesPerSecond float64 `json:"rollup_writes_per_second"`
	// Staleness of the roll-up (now - updated_at) sampled during the load, and the time from the
	// last acknowledged increment until the roll-up was exact.
	StalenessP50   time.Duration `json:"staleness_p50_ns"`
	StalenessP99   time.Duration `json:"staleness_p99_ns"`
	StalenessMax   time.Duration `json:"staleness_max_ns"`
	TrailingEdge   time.Duration `json:"trailing_edge_ns"`
	ExactCount     int64         `json:"exact_count"`
	ExactCheck     string        `json:"exact_check"`
	ExactCheckPass bool          `json:"exact_check_pass"`
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

// CountCommits fills the commit figures of r from the commits made between from and to.
func (r *Run) CountCommits(commits []commitlog.Commit, from, to time.Time, rollupsPrefix, shardsMarker string, counters int) {
	perWindow := map[string]map[int64]int{} // document -> 1-second window -> writes
	var nCommits, nDocs, rollupWrites int
	for _, c := range commits {
		if c.Time.Before(from) || c.Time.After(to) {
			continue
		}
		nCommits++
		for _, d := range c.Docs {
			nDocs++
			if strings.HasPrefix(d, rollupsPrefix) {
				rollupWrites++
			}
			if perWindow[d] == nil {
				perWindow[d] = map[int64]int{}
			}
			perWindow[d][c.Time.Unix()]++
		}
	}
	if r.Acknowledged > 0 {
		r.CommitsPer1000 = 1000 * float64(nCommits) / float64(r.Acknowledged)
		r.DocumentsPer1000 = 1000 * float64(nDocs) / float64(r.Acknowledged)
	}
	for doc, windows := range perWindow {
		for _, n := range windows {
			if n > r.HottestWritesPerSecond || (n == r.HottestWritesPerSecond && doc < r.HottestDocument) {
				r.HottestWritesPerSecond, r.HottestDocument = n, doc
			}
			if strings.Contains(doc, shardsMarker) && n > r.HottestShardWritesPerSecond {
				r.HottestShardWritesPerSecond = n
			}
		}
	}
	if span := to.Sub(from).Seconds(); span > 0 && counters > 0 {
		r.RollupWritesPerSecond = float64(rollupWrites) / span / float64(counters)
	}
}

// Report is the side-by-side result of one invocation.
type Report struct {
	// Command reproduces the run.
	Command string `json:"command"`
	// Runs are the modes, guide mode first.
	Runs []Run `json:"runs"`
	// Ratios compare the last run with the first.
	Ratios map[string]float64 `json:"ratios"`
}

// Compare fills Ratios: the first run (the guide's approach) over the last.
func (rep *Report) Compare() {
	if len(rep.Runs) < 2 {
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
		"hottest_shard_writes_fewer_x": ratio(float64(base.HottestShardWritesPerSecond), float64(cur.HottestShardWritesPerSecond)),
		"latency_p99_x":                ratio(float64(cur.LatencyP99), float64(base.LatencyP99)),
	}
}

// WriteMarkdown renders the report as a Markdown table, one column per run.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	rows := []struct {
		name string
		cell func(Run) string
	}{
		{"increments acknowledged", func(r Run) string { return fmt.Sprint(r.Acknowledged) }},
		{"increments failed", func(r Run) string { return fmt.Sprint(r.Failed) }},
		{"acknowledged increments/s", func(r Run) string { return fmt.Sprintf("%.0f", r.IncrementsPerSecond) }},
		{"latency p50 / p99 / max", func(r Run) string {
			return ms(r.LatencyP50) + " / " + ms(r.LatencyP99) + " / " + ms(r.LatencyMax)
		}},
		{"Firestore commits per 1,000 increments", func(r Run) string { return fmt.Sprintf("%.1f", r.CommitsPer1000) }},
		{"documents written per 1,000 increments", func(r Run) string { return fmt.Sprintf("%.1f", r.DocumentsPer1000) }},
		{"hottest shard, writes/s (max over 1 s windows)", func(r Run) string { return fmt.Sprint(r.HottestShardWritesPerSecond) }},
		{"hottest document, writes/s", func(r Run) string { return fmt.Sprintf("%d (%s)", r.HottestWritesPerSecond, r.HottestDocument) }},
		{"roll-up writes/s per counter", func(r Run) string { return fmt.Sprintf("%.2f", r.RollupWritesPerSecond) }},
		{"roll-up staleness p50 / p99 / max", func(r Run) string {
			return ms(r.StalenessP50) + " / " + ms(r.StalenessP99) + " / " + ms(r.StalenessMax)
		}},
		{"roll-up exact after the load stopped", func(r Run) string { return ms(r.TrailingEdge) }},
		{"exact vs acknowledged", func(r Run) string {
			mark := "FAIL"
			if r.ExactCheckPass {
				mark = "ok"
			}
			return mark + ": " + r.ExactCheck
		}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`\n\n| | %s |\n|---|%s\n", rep.Command, strings.Join(modes(rep.Runs), " | "), strings.Repeat("---|", len(rep.Runs)))
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
		b.WriteString("\nRatios (" + rep.Runs[0].Mode + " vs " + rep.Runs[len(rep.Runs)-1].Mode + "):\n\n")
		for _, name := range names {
			fmt.Fprintf(&b, "- %s: %.2f\n", name, rep.Ratios[name])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func modes(runs []Run) []string {
	m := make([]string, len(runs))
	for i, r := range runs {
		m[i] = r.Mode
	}
	return m
}
