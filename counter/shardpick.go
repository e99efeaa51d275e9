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
	decks map[string][]int // per counter: the shards not yet dealt in this round
	sizes map[string]int   // per counter: the shard count the deck was shuffled for
}

func newShardDealer() *shardDealer {
	return &shardDealer{decks: make(map[string][]int), sizes: make(map[string]int)}
}

// pick deals the next shard of counter id, whose shard count is numShards.
func (d *shardDealer) pick(id string, numShards int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	deck := d.decks[id]
	if len(deck) == 0 || d.sizes[id] != numShards {
		if victim, ok := evictFor(d.sizes, id); ok { // the victim starts a fresh deck
			delete(d.decks, victim)
		}
		deck = rand.Perm(numShards)
		d.sizes[id] = numShards
	}
	d.decks[id] = deck[1:]
	return deck[0]
}
