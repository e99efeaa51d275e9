package commitlog

import (
	"sort"
	"time"
)

// DocumentWindow is one document's busiest window: Writes commits wrote Doc from Start on.
type DocumentWindow struct {
	Doc    string
	Writes int
	Start  time.Time
}

// BusiestWindows returns, busiest first, each document's most commits within any [t, t+window)
// inside [from, to).
func BusiestWindows(commits []Commit, from, to time.Time, window time.Duration) []DocumentWindow {
	times := make(map[string][]time.Time)
	for _, c := range commits {
		if c.Time.Before(from) || !c.Time.Before(to) {
			continue
		}
		for _, d := range c.Docs {
			times[d] = append(times[d], c.Time)
		}
	}
	busiest := make([]DocumentWindow, 0, len(times))
	for doc, ts := range times {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		best := DocumentWindow{Doc: doc}
		end := 0
		for start := range ts {
			for end < len(ts) && ts[end].Before(ts[start].Add(window)) {
				end++
			}
			if n := end - start; n > best.Writes {
				best.Writes, best.Start = n, ts[start]
			}
		}
		busiest = append(busiest, best)
	}
	sort.Slice(busiest, func(i, j int) bool {
		if busiest[i].Writes != busiest[j].Writes {
			return busiest[i].Writes > busiest[j].Writes
		}
		return busiest[i].Doc < busiest[j].Doc
	})
	return busiest
}
