package loadreport

import (
	"time"

	"github.com/shardcount/counters/internal/commitlog"
)

// WriteRates are each document's writes in each second of a run, from its commit log.
type WriteRates struct {
	Start     time.Time // beginning of second 0
	Seconds   int
	PerSecond map[string][]int // by document path
}

// DocRate is one document's write rate over a window.
type DocRate struct {
	Document        string  `json:"document"` // path below the database
	WritesPerSecond float64 `json:"writes_per_second"`
}

// NewWriteRates buckets the documents written by commits in [from, to) into seconds from from.
func NewWriteRates(commits []commitlog.Commit, from, to time.Time) WriteRates {
	seconds := max(1, int((to.Sub(from)+time.Second-1)/time.Second))
	w := WriteRates{Start: from, Seconds: seconds, PerSecond: map[string][]int{}}
	for _, c := range commits {
		if c.Time.Before(from) || !c.Time.Before(to) {
			continue
		}
		i := int(c.Time.Sub(from) / time.Second)
		for _, d := range c.Docs {
			if w.PerSecond[d] == nil {
				w.PerSecond[d] = make([]int, seconds)
			}
			w.PerSecond[d][i]++
		}
	}
	return w
}

// windowLength caps window at the run's length.
func (w WriteRates) windowLength(window int) int { return max(1, min(window, w.Seconds)) }

// Hottest is the kept document (nil keep: all) with the highest rate over any window of window
// seconds; ties go to the first path.
func (w WriteRates) Hottest(window int, keep func(doc string) bool) DocRate {
	var best DocRate
	w.trailing(window, keep, func(doc string, _ int, full bool, rate float64) {
		if full && (rate > best.WritesPerSecond || (rate == best.WritesPerSecond && rate > 0 && doc < best.Document)) {
			best = DocRate{Document: doc, WritesPerSecond: rate}
		}
	})
	return best
}

// HottestEachSecond is, per second i, the highest rate of a kept document over the window ending at i.
func (w WriteRates) HottestEachSecond(window int, keep func(doc string) bool) []float64 {
	out := make([]float64, w.Seconds)
	w.trailing(window, keep, func(_ string, i int, _ bool, rate float64) { out[i] = max(out[i], rate) })
	return out
}

// trailing visits each kept document's rate over the window ending at second i; full says the
// window is not cut by the run's start.
func (w WriteRates) trailing(window int, keep func(doc string) bool, visit func(doc string, i int, full bool, rate float64)) {
	n := w.windowLength(window)
	for doc, counts := range w.PerSecond {
		if keep != nil && !keep(doc) {
			continue
		}
		sum := 0
		for i, c := range counts {
			sum += c
			if i >= n {
				sum -= counts[i-n]
			}
			visit(doc, i, i >= n-1, float64(sum)/float64(min(i+1, n)))
		}
	}
}
