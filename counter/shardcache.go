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

// shardCountCache remembers what increments need of counters' configuration (shard count, windows)
// for a TTL, so a warm increment reads nothing.
type shardCountCache struct {
	ttl   time.Duration
	clock shared.Clock

	mu      sync.Mutex
	entries map[string]shardCountEntry
}

type shardCountEntry struct {
	writeConfig
	expires time.Time
}

// writeConfig is what a shard write needs of its counter's configuration.
type writeConfig struct {
	numShards int
	// windows are the windows (WindowHour, ...) the counter counts in besides all time.
	windows []string
	// distinct: the counter counts distinct members (Request.Member), not deltas.
	distinct bool
	// membersEpoch is the counter's member epoch (membersEpoch).
	membersEpoch string
	// legacyMembers: the counter has no shared.FieldMemberCollection, so its members may also be in
	// shared.LegacyMembersCollection (memberRefs).
	legacyMembers bool
	// source: the counter counts documents (changes), not increments.
	source bool
}

func newShardCountCache(ttl time.Duration, clock shared.Clock) *shardCountCache {
	return &shardCountCache{ttl: ttl, clock: clock, entries: make(map[string]shardCountEntry)}
}

// get returns the cached configuration of a counter, or false when it is unknown or expired.
func (c *shardCountCache) get(id string) (writeConfig, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || !c.clock.Now().Before(e.expires) {
		return writeConfig{}, false
	}
	return e.writeConfig, true
}

// put caches cfg as counter id's configuration.
func (c *shardCountCache) put(id string, cfg writeConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	evictFor(c.entries, id)
	c.entries[id] = shardCountEntry{writeConfig: cfg, expires: c.clock.Now().Add(c.ttl)}
}

// forget drops a counter's cached configuration, so the next write reads it again.
func (c *shardCountCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
}
