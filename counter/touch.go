package counter

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shardcount/counters/shared"
)

// touchStamps remembers, per counter, the last minute this instance stamped on counters/{id} as
// touched_minute. A shard write stamps the counter document in the same commit at most once per
// minute per instance, so the scheduled sweep finds every changed counter with one query on the
// counters collection (one read per changed counter) while the counter document stays far below one
// write per second: with K instances, K writes a minute.
//
// Each instance's minutes start at its own random offset: were they to start on the clock's
// minute, every instance serving a hot counter would stamp it within the same instant, K writes at
// once. The stamp is the minute of the write's time less the offset: it is never later than the
// write's minute and at most one minute earlier (the sweep allows for that).
type touchStamps struct {
	clock  shared.Clock
	offset time.Duration

	mu   sync.Mutex
	last map[string]int64
}

func newTouchStamps(clock shared.Clock) *touchStamps {
	return &touchStamps{clock: clock, offset: rand.N(time.Minute), last: make(map[string]int64)}
}

// due reports whether a write of counter id now must stamp the counter document, and with which
// minute. The stamp counts only once record says a commit holding it applied.
func (t *touchStamps) due(id string) (minute int64, ok bool) {
	minute = shared.UnixMinute(t.clock.Now().Add(-t.offset))
	t.mu.Lock()
	defer t.mu.Unlock()
	last, seen := t.last[id]
	return minute, !seen || last < minute
}

// record notes that a committed write stamped counter id with minute.
func (t *touchStamps) record(id string, minute int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	evictFor(t.last, id) // the victim only stamps once more
	t.last[id] = max(t.last[id], minute)
}

// forget drops what this instance knows of counter id's stamp (the counter was deleted), so its next
// write stamps again.
func (t *touchStamps) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.last, id)
}
