package localstack

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/testenv"
)

// BenchmarkEventsAmongManyShards measures the event bridge alone: it watches 1,000 or 10,000 shard
// documents (100 or 1,000 counters of 10), and 64 goroutines increment random shards; each op is
// one write. It reports each event's delay, from its document's update time to its arrival at the
// function (delay-p50-ms, delay-p99-ms), and the events per write (below 1 where the listen stream
// merged writes of one document). The figures say whether the listen stream keeps up with many
// watched documents when nothing else loads the emulator (docs/performance.md, "Many warm
// counters, locally").
func BenchmarkEventsAmongManyShards(b *testing.B) {
	const shardsPerCounter = 10
	for _, counters := range []int{100, 1000} {
		b.Run(fmt.Sprintf("shards=%d", counters*shardsPerCounter), func(b *testing.B) {
			benchmarkEvents(b, counters, shardsPerCounter)
		})
	}
}

func benchmarkEvents(b *testing.B, counters, shardsPerCounter int) {
	ctx := context.Background()
	project := testenv.NewProjectID()
	client := testenv.FirestoreOf(b, project)
	writer := client.BulkWriter(ctx)
	shard := func(c, s int) *firestore.DocumentRef {
		return client.Doc(fmt.Sprintf("counters/c%d/shards/%d", c, s))
	}
	for c := range counters {
		for s := range shardsPerCounter {
			if _, err := writer.Set(shard(c, s), map[string]any{"count": 0}); err != nil {
				b.Fatal(err)
			}
		}
	}
	writer.End()

	var mu sync.Mutex
	var delays []time.Duration
	events := 0
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		arrived := time.Now()
		value, err := eventhttp.WrittenDocument(body)
		if err != nil {
			b.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		events++
		if count(value) > 0 { // not a watch's first sight of a zero shard
			delays = append(delays, arrived.Sub(value.GetUpdateTime().AsTime()))
		}
	}))
	defer fn.Close()
	bridge, err := startEventBridge(io.Discard, "127.0.0.1:0", 1000, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer bridge.stop()
	api, err := dialFirestore(ctx, testenv.FirestoreEmulatorHost(b))
	if err != nil {
		b.Fatal(err)
	}
	bridge.firestore = api
	if err := bridge.watchTriggerDocuments(bridge.watching, api, databaseName(project, "(default)"), "google.cloud.firestore.document.v1.written", "counters/{counter}/shards/{shard}", fn.URL, false); err != nil {
		b.Fatal(err)
	}
	seen := func() int { mu.Lock(); defer mu.Unlock(); return events }
	waitFor := func(n int, settle bool) {
		deadline := time.Now().Add(2 * time.Minute)
		last, lastChange := -1, time.Now()
		for time.Now().Before(deadline) {
			have := seen()
			if have >= n && !settle {
				return
			}
			if have != last {
				last, lastChange = have, time.Now()
			} else if settle && time.Since(lastChange) > 2*time.Second {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		b.Fatalf("%d events after 2 min, want %d", seen(), n)
	}
	waitFor(counters*shardsPerCounter, false) // every shard watched: each shows once as it is
	before := seen()

	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := shard(rand.IntN(counters), rand.IntN(shardsPerCounter)).Update(ctx, []firestore.Update{{Path: "count", Value: firestore.Increment(1)}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	waitFor(0, true)
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(delays)
	at := func(q float64) float64 {
		return float64(delays[int(q*float64(len(delays)-1))]) / float64(time.Millisecond)
	}
	if len(delays) == 0 {
		b.Fatal("no event of the timed writes")
	}
	b.ReportMetric(at(0.5), "delay-p50-ms")
	b.ReportMetric(at(0.99), "delay-p99-ms")
	b.ReportMetric(float64(events-before)/float64(b.N), "events/write")
}
