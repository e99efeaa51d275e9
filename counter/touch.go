package counter

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shardcount/counters/shared/clock"

	"github.com/shardcount/counters/shared"
)

// touchStamps lets writes stamp touched_minute at most once a minute per counter (a random offset:
// up to a minute early, never late).
type touchStamps struct {
	clock  clock.Clock
	offset time.Duration

	mu   sync.Mutex
	last map[string]int64
}

func newTouchStamps(clock clock.Clock) *touchStamps {
	return &touchStamps{clock: clock, offset: rand.N(time.Minute), last: make(map[string]int64)}
}

// due reports whether a write of counter id must stamp, and the minute.
func (t *touchStamps) due(id string) (minute int64, ok bool) {
	minute = shared.UnixMinute(t.clock.Now().Add(-t.offset))
	t.mu.Lock()
	defer t.mu.Unlock()
	last, seen := t.last[id]
	return minute, !seen || last < minute
}

// record notes a committed stamp.
func (t *touchStamps) record(id string, minute int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	evictFor(t.last, id)
	t.last[id] = max(t.last[id], minute)
}

// forget drops counter id's stamp, so its next write stamps.
func (t *touchStamps) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.last, id)
}
