package counter

import (
	"math/rand/v2"
	"sync"
)

// shardDealer picks the shard of each write of a counter by dealing from a shuffled deck of the
// counter's shard numbers, reshuffled once every shard has been dealt. Within one instance a shard is
// then written exactly once per numShards writes of the counter (a random pick would put Poisson
// bursts on some shards: at 8 writes/s over 10 shards, 10 s windows with 11 or more writes on one
// shard happen every few minutes). Across instances the decks are independent, so instances never
// fall into step, and the roll-up sizes the shard count for their total rate.
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
