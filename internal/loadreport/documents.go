package loadreport

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/counters/internal/commitlog"
)

// Documents are the figures of a run whose clients change the app's own documents, counted by
// collection counters or by write-time aggregation (a transaction on the parent per event).
type Documents struct {
	Counting         string  `json:"counting"`
	Parents          int     `json:"parents"` // one counter each
	Changes          int64   `json:"changes"` // creates, deletes and moves committed
	Moves            int64   `json:"moves"`   // updates of a counter field: a like to another post
	Failed           int64   `json:"failed"`
	ChangesPerSecond float64 `json:"changes_per_second"`
	Copies           int     `json:"copies"` // deliveries of each event
	// Deliveries include copies; DeliveriesFailed were given up on; Invocations are all attempts.
	Deliveries       int64 `json:"deliveries"`
	DeliveriesFailed int64 `json:"deliveries_failed"`
	Invocations      int64 `json:"invocations"`
	// Redeliveries are attempts after an event's first, asked for by failed answers; InDelivery
	// events had not settled (acknowledged or given up) when the counts were judged.
	Redeliveries int64 `json:"redeliveries"`
	InDelivery   int64 `json:"in_delivery"`
	// HandledPerSecond is events handled per second until the event queue was empty.
	HandledPerSecond float64 `json:"handled_per_second"`
	// Applied and AppliedTwice (same event ID again) are write-time aggregation's; else zero.
	Applied      int64 `json:"applied,omitempty"`
	AppliedTwice int64 `json:"applied_twice,omitempty"`
	// Drained is how long after the last change the last event was acknowledged.
	Drained time.Duration `json:"drained_ns"`
	// Listen is, for the stack's events of the counted documents, write to the bridge's receipt
	// (versions only: a delete has no write time); Handle is delivery to the function's answer.
	ListenP50 time.Duration `json:"listen_p50_ns"`
	ListenP90 time.Duration `json:"listen_p90_ns"`
	HandleP50 time.Duration `json:"handle_p50_ns"`
	HandleP90 time.Duration `json:"handle_p90_ns"`
	// ExactAfter is how long after its last change a counter showed count() for good, as a listener
	// saw it; Exact of Parents did.
	ExactAfterP50 time.Duration `json:"exact_after_p50_ns"`
	ExactAfterMax time.Duration `json:"exact_after_max_ns"`
	Exact         int           `json:"exact"`
	// Error is the final sum of |value - count()|; Off counters differed, Overcounted held more.
	Error       int64 `json:"error"`
	Off         int   `json:"off"`
	Overcounted int   `json:"overcounted"`
	// DocumentsPerChange counts our documents (write-time aggregation: parents); ByKind splits it.
	DocumentsPerChange float64            `json:"documents_per_change"`
	CommitsPerChange   float64            `json:"commits_per_change"`
	ByKind             map[string]float64 `json:"by_kind"`
	HottestByKind      map[string]DocRate `json:"hottest_by_kind"` // over 1 s windows
	// ReadsPerChange counts the reads Firestore bills us (commitlog.Recorder); ReadsByKind splits it.
	ReadsPerChange float64            `json:"reads_per_change"`
	ReadsByKind    map[string]float64 `json:"reads_by_kind"`
}

// CountDocumentWrites fills r's commit figures from the commits in [from, to); kind names a
// document's kind, "" for one not ours.
func (r *Run) CountDocumentWrites(commits []commitlog.Commit, from, to time.Time, kind func(doc string) string) {
	d := r.Documents
	var nCommits int
	d.DocumentsPerChange, d.ByKind = d.perChange(commits, from, to, kind, func() { nCommits++ })
	d.HottestByKind = map[string]DocRate{}
	rates := NewWriteRates(commits, from, to)
	for k := range d.ByKind {
		d.HottestByKind[k] = rates.Hottest(1, func(doc string) bool { return kind(doc) == k })
	}
	d.CommitsPerChange = float64(nCommits) / float64(max(1, d.Changes))
	ours := func(doc string) bool { return kind(doc) != "" }
	r.Hottest1s, r.Hottest10s = rates.Hottest(1, ours), rates.Hottest(10, ours)
	each1s, each10s := rates.HottestEachSecond(1, ours), rates.HottestEachSecond(10, ours)
	for i := range r.Timeline {
		if i < len(each1s) {
			r.Timeline[i].Hottest1s, r.Timeline[i].Hottest10s = each1s[i], each10s[i]
		}
	}
}

// CountDocumentReads fills r's read figures from the read log's lines in [from, to).
func (r *Run) CountDocumentReads(reads []commitlog.Commit, from, to time.Time, kind func(doc string) string) {
	d := r.Documents
	d.ReadsPerChange, d.ReadsByKind = d.perChange(reads, from, to, kind, func() {})
}

// perChange is, per change, the documents of ours in lines in [from, to), in all and by kind;
// ours is called for each line holding one.
func (d *Documents) perChange(lines []commitlog.Commit, from, to time.Time, kind func(doc string) string, ours func()) (float64, map[string]float64) {
	var n int
	byKind := map[string]float64{}
	per := 1 / float64(max(1, d.Changes))
	for _, c := range lines {
		if c.Time.Before(from) || !c.Time.Before(to) {
			continue
		}
		counted := false
		for _, doc := range c.Docs {
			if k := kind(doc); k != "" {
				byKind[k] += per
				n++
				counted = true
			}
		}
		if counted {
			ours()
		}
	}
	return float64(n) * per, byKind
}

// documentRows are the table rows of document runs.
var documentRows = []struct {
	name string
	cell func(Run, *Documents) string
}{
	{"counted by", func(_ Run, d *Documents) string { return d.Counting }},
	{"document changes committed (failed) / per second / of them moves", func(_ Run, d *Documents) string {
		return fmt.Sprintf("%d (%d) / %.0f / %d", d.Changes, d.Failed, d.ChangesPerSecond, d.Moves)
	}},
	{"parents (counters)", func(_ Run, d *Documents) string { return fmt.Sprint(d.Parents) }},
	{"deliveries of each event", func(_ Run, d *Documents) string { return fmt.Sprint(d.Copies) }},
	{"events delivered / given up / invocations", func(_ Run, d *Documents) string {
		return fmt.Sprintf("%d / %d / %d", d.Deliveries, d.DeliveriesFailed, d.Invocations)
	}},
	{"events applied / of them applied again (double counts)", func(_ Run, d *Documents) string {
		if d.Applied == 0 {
			return "- (the ledger counts each change once: see the final error)"
		}
		return fmt.Sprintf("%d / %d", d.Applied, d.AppliedTwice)
	}},
	{"redeliveries asked for (failed answers) / events still in delivery when judged", func(_ Run, d *Documents) string {
		return fmt.Sprintf("%d / %d", d.Redeliveries, d.InDelivery)
	}},
	{"events handled/s (until the queue was empty)", func(_ Run, d *Documents) string { return fmt.Sprintf("%.0f", d.HandledPerSecond) }},
	{"event queue empty after the last change", func(_ Run, d *Documents) string { return seconds(d.Drained) }},
	{"an event's time in the emulator's listen stream / in the function, p50 / p90", func(_ Run, d *Documents) string {
		if d.HandleP50 == 0 {
			return "-"
		}
		return fmt.Sprintf("%s / %s, %s / %s", seconds(d.ListenP50), seconds(d.ListenP90), seconds(d.HandleP50), seconds(d.HandleP90))
	}},
	{"counters exact (= count()) after their last change, p50 / max", func(_ Run, d *Documents) string {
		if d.Exact < d.Parents {
			return fmt.Sprintf("%d of %d never (within the wait); exact ones: %s / %s", d.Parents-d.Exact, d.Parents, seconds(d.ExactAfterP50), seconds(d.ExactAfterMax))
		}
		return seconds(d.ExactAfterP50) + " / " + seconds(d.ExactAfterMax)
	}},
	{"final error: sum of |value - count()| (counters off, of which over)", func(_ Run, d *Documents) string {
		return fmt.Sprintf("%d (%d, %d)", d.Error, d.Off, d.Overcounted)
	}},
	{"documents written per change (commits per change)", func(_ Run, d *Documents) string {
		return fmt.Sprintf("%.3f (%.3f)", d.DocumentsPerChange, d.CommitsPerChange)
	}},
	{"  of which, by kind", func(_ Run, d *Documents) string {
		return byKind(d.ByKind, func(k string) string { return fmt.Sprintf(" (hottest %s)", rate(d.HottestByKind[k])) })
	}},
	{"documents read per change, by kind", func(_ Run, d *Documents) string {
		return fmt.Sprintf("%.3f: %s", d.ReadsPerChange, byKind(d.ReadsByKind, func(string) string { return "" }))
	}},
	{"hottest document of ours, writes/s, 1 s / 10 s window", func(r Run, _ *Documents) string {
		return rate(r.Hottest1s) + " / " + rate(r.Hottest10s)
	}},
}

// byKind lists the kinds of perKind, the most first, each with its figure and note.
func byKind(perKind map[string]float64, note func(kind string) string) string {
	kinds := make([]string, 0, len(perKind))
	for k := range perKind {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if perKind[a] != perKind[b] {
			if perKind[a] > perKind[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %.3f%s", k, perKind[k], note(k))
	}
	return strings.Join(parts, "; ")
}

// seconds formats a duration in seconds.
func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// writeDocumentsTable renders the table of document runs, a column each.
func writeDocumentsTable(w io.Writer, runs []Run) {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.Name
	}
	fmt.Fprintf(w, "| | %s |\n|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(runs)))
	for _, row := range documentRows {
		cells := make([]string, len(runs))
		for i, r := range runs {
			if r.Documents != nil {
				cells[i] = row.cell(r, r.Documents)
			}
		}
		fmt.Fprintf(w, "| %s | %s |\n", row.name, strings.Join(cells, " | "))
	}
}
