package counter

import (
	"fmt"
	"testing"
)

func TestDealerWritesEveryShardOncePerRound(t *testing.T) {
	d := newShardDealer()
	for round := range 5 {
		seen := make(map[int]bool)
		for range 10 {
			n := d.pick("c", 10)
			if n < 0 || n >= 10 || seen[n] {
				t.Fatalf("round %d: dealt %d (seen %v); want each of 0..9 once per round", round, n, seen)
			}
			seen[n] = true
		}
	}
}

func TestDealerFollowsANewShardCount(t *testing.T) {
	d := newShardDealer()
	d.pick("c", 10)
	seen := make(map[int]bool)
	for range 3 {
		n := d.pick("c", 3)
		if n >= 3 || seen[n] {
			t.Fatalf("dealt %d after the count fell to 3 (seen %v)", n, seen)
		}
		seen[n] = true
	}
}

func TestDealerKeepsCountersApart(t *testing.T) {
	d := newShardDealer()
	a, b := make(map[int]bool), make(map[int]bool)
	for range 4 {
		a[d.pick("a", 4)] = true
		b[d.pick("b", 4)] = true
	}
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("counters share a deck: a got %v, b got %v", a, b)
	}
}

// TestEvictForBoundsPerCounterMaps: a full per-counter map loses one request to a new counter, none to a
// counter it holds, and never grows past maxCachedCounters.
func TestEvictForBoundsPerCounterMaps(t *testing.T) {
	m := make(map[string]int, maxCachedCounters)
	for i := range maxCachedCounters {
		m[fmt.Sprint(i)] = i
	}
	if evictFor(m, "7"); len(m) != maxCachedCounters {
		t.Fatalf("room made for a counter already held: %d entries", len(m))
	}
	if evictFor(m, "new"); len(m) != maxCachedCounters-1 {
		t.Fatalf("room for a new counter: %d entries; want one request gone", len(m))
	}
}
