package counter

import (
	"math/rand/v2"
	"sync"
)

// shardDealer deals each counter's shards from a shuffled deck, so a Store writes each shard once per
// numShards writes. Safe for concurrent use.
type shardDealer struct {
	mu    sync.Mutex
	decks map[string]deck
}

// deck is one counter's undealt shards for a shard count of size.
type deck struct {
	size int
	rest []int
}

func newShardDealer() *shardDealer {
	return &shardDealer{decks: make(map[string]deck)}
}

// pick deals counter id's next shard of numShards.
func (d *shardDealer) pick(id string, numShards int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	dk := d.decks[id]
	if len(dk.rest) == 0 || dk.size != numShards {
		evictFor(d.decks, id)
		dk = deck{size: numShards, rest: rand.Perm(numShards)}
	}
	d.decks[id] = deck{size: dk.size, rest: dk.rest[1:]}
	return dk.rest[0]
}
