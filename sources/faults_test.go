package sources_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/sources"
)

// TestLostAnswersOnFourInstancesCountEachDocumentOnce: 200 likes written before their 10 counters
// exist, each event delivered twice, to four instances whose Firestore connections lose 5 % of the
// answers and reset 2 %: bases and changes retried on other instances count each like once.
func TestLostAnswersOnFourInstancesCountEachDocumentOnce(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	set, err := sources.Parse([]byte(declarations), schema)
	if err != nil {
		t.Fatal(err)
	}
	var instances []*sources.Counting
	for range 4 {
		p, err := faultproxy.Start(testenv.FirestoreEmulatorHost(t), faultproxy.Faults{DropResponseRate: 0.05, ResetRate: 0.02})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		c, _ := testenv.FirestoreThrough(t, p.Addr(), id)
		instances = append(instances, instanceOf(t, c, set))
	}
	w := newWriter(t, client)
	const posts = 10
	for p := range posts {
		for u := range 20 {
			w.set(fmt.Sprintf("posts/p%d/likes/u%d", p, u), map[string]any{"at": u})
		}
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < len(w.writes)*2; i += 16 {
				ev := w.writes[i%len(w.writes)]
				for attempt := 0; ; attempt++ {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					_, err := instances[(i+attempt)%4].Count(ctx, ev) // a failure is retried elsewhere
					cancel()
					if err == nil {
						break
					}
					if attempt == 50 {
						t.Errorf("count %s: %v", ev.Path, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	checkExact(t, client, sumOf(t, client), posts, 0)
}
