package counter

import (
	"sync"
	"time"
)

// maxCachedCounters bounds the memory one instance spends on cached shard counts.
const maxCachedCounters = 10_000

// shardCountCache remembers counters' shard counts so an increment costs one write and no read.
type shardCountCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]shardCountEntry
}

type shardCountEntry struct {
	numShards int
	expires   time.Time
}

func newShardCountCache(ttl time.Duration, now func() time.Time) *shardCountCache {
	return &shardCountCache{ttl: ttl, now: now, entries: make(map[string]shardCountEntry)}
}

// get returns the cached shard count of a counter, or false when it is unknown or expired.
func (c *shardCountCache) get(id string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || !c.now().Before(e.expires) {
		return 0, false
	}
	return e.numShards, true
}

func (c *shardCountCache) put(id string, numShards int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[id]; !ok && len(c.entries) >= maxCachedCounters {
		for victim := range c.entries { // map order is random: a cheap random eviction
			delete(c.entries, victim)
			break
		}
	}
	c.entries[id] = shardCountEntry{numShards: numShards, expires: c.now().Add(c.ttl)}
}

// drop forgets a counter's shard count, so the next increment reads the counter document again.
func (c *shardCountCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
}
