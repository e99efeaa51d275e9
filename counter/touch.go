package counter

import (
	"sync"
	"time"

	"github.com/shardcount/counters/shared"
)

// touchTracker remembers the minute each counter's touched_minute was last stamped by this instance,
// so a write stamps its counter at most once a minute: one more document in one commit a minute,
// whatever the write rate.
type touchTracker struct {
	mu      sync.Mutex
	minutes map[string]int64
}

func newTouchTracker() *touchTracker { return &touchTracker{minutes: make(map[string]int64)} }

// due reports whether a write of counter id at now should stamp it.
func (t *touchTracker) due(id string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.minutes[id] != shared.UnixMinute(now)
}

// record notes that a committed write stamped counter id at now.
func (t *touchTracker) record(id string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.minutes[id]; !ok && len(t.minutes) >= maxCachedCounters {
		clear(t.minutes) // forgetting only costs one more stamp per counter
	}
	t.minutes[id] = shared.UnixMinute(now)
}
