package sources_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/sources"
)

// TestAViralCounterOnFourInstancesNeedsNoRedelivery: one post's burst of 300 like changes (half of
// them unlikes of likes older than the counter, each judged by a read at the base), every event
// delivered twice at once to four instances committing a counter's changes every 250 ms. Each
// change is counted once, no delivery fails (none would be redelivered), and each change's record
// is written by one commit: no ledger document takes the writes of several instances' transactions.
func TestAViralCounterOnFourInstancesNeedsNoRedelivery(t *testing.T) {
	clients, instances, commits := recordedInstances(t, 4, func(c *firestore.Client, set *sources.Set) *sources.Counting {
		return instanceWith(t, c, set, counter.Options{DefaultNumShards: 10, ShardCountCacheTTL: time.Minute,
			DedupeTTL: 24 * time.Hour}, 250*time.Millisecond)
	})
	const likers = 150
	before := newWriter(t, clients[0])
	for u := range likers {
		before.set(fmt.Sprintf("posts/p0/likes/u%d", u), map[string]any{"at": u})
	}
	deliver(t, before.writes[:1], instances[0]) // the base holds every like so far
	based := len(commits())

	burst := before // its versions are the deletes' old values
	made := len(burst.writes)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for u := g; u < 2*likers; u += 8 {
				if u < likers {
					burst.set(fmt.Sprintf("posts/p0/likes/u%d", u), nil)
				} else {
					burst.set(fmt.Sprintf("posts/p0/likes/u%d", u), map[string]any{"at": u})
				}
			}
		})
	}
	wg.Wait()
	events := append(append([]sources.Write{}, burst.writes[made:]...), burst.writes[made:]...)
	rand.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	var failed atomic.Int64
	for g := range 32 {
		wg.Go(func() {
			for i := g; i < len(events); i += 32 {
				for attempt := 0; ; attempt++ {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					_, err := instances[(i+attempt)%len(instances)].Count(ctx, events[i])
					cancel()
					if err == nil {
						break
					}
					if failed.Add(1) == 1 || attempt == 5 {
						t.Errorf("count %s (attempt %d): %v", events[i].Path, attempt+1, err)
					}
					if attempt == 5 {
						return
					}
				}
			}
		})
	}
	wg.Wait()
	checkExact(t, clients[0], sumOf(t, clients[0]), 1, 0)
	if n := failed.Load(); n > 0 {
		t.Errorf("%d deliveries failed and would be redelivered, want none", n)
	}
	writers := map[string]int{}
	for _, c := range commits()[based:] {
		for _, doc := range c.Docs {
			if strings.Contains(doc, "/counter_change_ledger/") {
				writers[doc]++
			}
		}
	}
	for doc, n := range writers {
		if n > 1 {
			t.Errorf("%s was written by %d commits, want 1 (one record per change)", doc, n)
		}
	}
	if len(writers) != 2*likers {
		t.Errorf("%d change records written for %d changes, want one each", len(writers), 2*likers)
	}
}
