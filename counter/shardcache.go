package counter

import (
	"sync"
	"time"

	"github.com/shardcount/counters/shared"
)

// maxCachedCounters bounds each per-counter map of a Store: shard counts, shard decks, touched stamps.
const maxCachedCounters = 10_000

// evictFor makes room for counter id in m: when id is not in m and m holds maxCachedCounters
// entries, it deletes one at random.
func evictFor[V any](m map[string]V, id string) {
	if _, ok := m[id]; ok || len(m) < maxCachedCounters {
		return
	}
	for victim := range m {
		delete(m, victim)
		return
	}
}

// shardCountCache remembers counters' shard counts for a TTL, so a warm increment reads nothing.
type shardCountCache struct {
	ttl   time.Duration
	clock shared.Clock

	mu      sync.Mutex
	entries map[string]shardCountEntry
}

type shardCountEntry struct {
	numShards int
	expires   time.Time
}

func newShardCountCache(ttl time.Duration, clock shared.Clock) *shardCountCache {
	return &shardCountCache{ttl: ttl, clock: clock, entries: make(map[string]shardCountEntry)}
}

// get returns the cached shard count of a counter, or false when it is unknown or expired.
func (c *shardCountCache) get(id string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || !c.clock.Now().Before(e.expires) {
		return 0, false
	}
	return e.numShards, true
}

// put caches numShards as counter id's shard count.
func (c *shardCountCache) put(id string, numShards int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	evictFor(c.entries, id)
	c.entries[id] = shardCountEntry{numShards: numShards, expires: c.clock.Now().Add(c.ttl)}
}

// forget drops a counter's cached shard count, so the next write reads it again.
func (c *shardCountCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
}
