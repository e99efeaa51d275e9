package counter

import (
	"math/rand/v2"
	"sync"
)

// shardDealer picks the shard of each write of a counter from a shuffled deck of its shard numbers,
// reshuffled once every shard has been dealt: one Store writes each shard once per numShards writes.
// It is safe for concurrent use.
type shardDealer struct {
	mu    sync.Mutex
	decks map[string]deck
}

// deck is one counter's round: the shards not yet dealt, shuffled for a shard count of size.
type deck struct {
	size int
	rest []int
}

func newShardDealer() *shardDealer {
	return &shardDealer{decks: make(map[string]deck)}
}

// pick deals the next shard of counter id, whose shard count is numShards.
func (d *shardDealer) pick(id string, numShards int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	dk := d.decks[id]
	if len(dk.rest) == 0 || dk.size != numShards {
		evictFor(d.decks, id) // the victim starts a fresh deck
		dk = deck{size: numShards, rest: rand.Perm(numShards)}
	}
	d.decks[id] = deck{size: dk.size, rest: dk.rest[1:]}
	return dk.rest[0]
}
