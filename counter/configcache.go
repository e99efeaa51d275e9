package counter

import (
	"sync"
	"time"

	"github.com/shardcount/counters/shared/clock"
)

// maxCachedCounters bounds each per-counter map of a Store.
const maxCachedCounters = 10_000

// evictFor makes room for counter id in m, deleting a random entry when full.
func evictFor[V any](m map[string]V, id string) {
	if _, ok := m[id]; ok || len(m) < maxCachedCounters {
		return
	}
	for victim := range m {
		delete(m, victim)
		return
	}
}

// configCache holds what shard writes need of counters' configuration (writeConfig), for a TTL.
type configCache struct {
	ttl   time.Duration
	clock clock.Clock

	mu      sync.Mutex
	entries map[string]configEntry
}

type configEntry struct {
	writeConfig
	expires time.Time
}

// writeConfig is what a shard write needs of its counter's configuration.
type writeConfig struct {
	numShards     int
	windows       []string
	distinct      bool
	membersEpoch  string
	legacyMembers bool // members may also be in shared.LegacyMembersCollection
	source        bool // a collection counter
}

func newConfigCache(ttl time.Duration, clock clock.Clock) *configCache {
	return &configCache{ttl: ttl, clock: clock, entries: make(map[string]configEntry)}
}

// get is counter id's cached configuration; false when unknown or expired.
func (c *configCache) get(id string) (writeConfig, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || !c.clock.Now().Before(e.expires) {
		return writeConfig{}, false
	}
	return e.writeConfig, true
}

// put caches cfg as counter id's configuration.
func (c *configCache) put(id string, cfg writeConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	evictFor(c.entries, id)
	c.entries[id] = configEntry{writeConfig: cfg, expires: c.clock.Now().Add(c.ttl)}
}

// forget drops counter id's cached configuration.
func (c *configCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, id)
}
