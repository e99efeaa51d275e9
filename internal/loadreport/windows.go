package loadreport

import (
	"time"

	"github.com/shardcount/counters/internal/commitlog"
)

// WriteRates are the writes of every document in each second of a run, from its commit log: what
// "about one sustained write per second per document" is measured against.
type WriteRates struct {
	// Start is the beginning of second 0.
	Start time.Time
	// Seconds is how many 1-second buckets the run spans.
	Seconds int
	// PerSecond maps a document path to its writes in each second.
	PerSecond map[string][]int
}

// DocRate is one document's write rate over a window.
type DocRate struct {
	// Document is the document's path below the database, e.g. counters/likes/shards/3.
	Document string `json:"document"`
	// WritesPerSecond is its writes in the window divided by the window's length.
	WritesPerSecond float64 `json:"writes_per_second"`
}

// NewWriteRates buckets the documents written by commits in [from, to) into seconds counted from from.
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

// windowLength is the window used for a requested length: the whole run when it is shorter.
func (w WriteRates) windowLength(window int) int { return max(1, min(window, w.Seconds)) }

// Hottest is the document with the highest write rate over any window of window consecutive seconds
// (sliding by one second) among the documents for which keep is true (nil keeps all), and that rate.
// A run shorter than the window is one window. Ties go to the first document in path order.
func (w WriteRates) Hottest(window int, keep func(doc string) bool) DocRate {
	var best DocRate
	w.trailing(window, keep, func(doc string, _ int, full bool, rate float64) {
		if full && (rate > best.WritesPerSecond || (rate == best.WritesPerSecond && rate > 0 && doc < best.Document)) {
			best = DocRate{Document: doc, WritesPerSecond: rate}
		}
	})
	return best
}

// HottestEachSecond is, for every second i, the highest write rate of any kept document over the
// window of window seconds that ends with second i (shorter at the start of the run).
func (w WriteRates) HottestEachSecond(window int, keep func(doc string) bool) []float64 {
	out := make([]float64, w.Seconds)
	w.trailing(window, keep, func(_ string, i int, _ bool, rate float64) { out[i] = max(out[i], rate) })
	return out
}

// trailing calls visit for every kept document and second i with the document's write rate over the
// window that ends with second i; full says whether the window is whole (not cut by the run's start).
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
