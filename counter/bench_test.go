//go:build unix

package counter_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/testenv"
)

// benchGoroutines is about how many goroutines increment one counter at once in the benchmarks:
// enough for group commit to have company in every interval, as a busy instance would. The exact
// number is a multiple of GOMAXPROCS (b.SetParallelism) and is in the benchmark's name.
const benchGoroutines = 64

// benchParallelism is the b.SetParallelism that runs at least benchGoroutines goroutines, and the
// number of goroutines it runs.
func benchParallelism() (parallelism, goroutines int) {
	procs := runtime.GOMAXPROCS(0)
	parallelism = (benchGoroutines + procs - 1) / procs
	return parallelism, parallelism * procs
}

// benchGroupCommitInterval is the group commit interval of the benchmarks: shorter than the
// production default so that a run of -benchtime 2000x takes about a second.
const benchGroupCommitInterval = 20 * time.Millisecond

// BenchmarkIncrementGuideMode measures counter.Increments.Increment of deltas with group commit off, as in the
// Firebase guide: every increment is one write of a random shard. About benchGoroutines goroutines
// increment one warm counter (created, and its shard count cached, before the timer starts) on the
// Firestore emulator.
//
// ns/op is wall time per increment across all goroutines, dominated by the emulator; B/op and
// allocs/op are this process's allocations per increment (the Firestore client and gRPC included);
// cpu-ns/op is this process's CPU time (user + system, from getrusage) per increment; commits/inc is
// the commits the client really made per increment, which should be 1. The commit recorder's own
// cost (one small JSON line per commit) is included in the process's figures.
//
// aborted/inc is the share of increments that failed with codes.Aborted: the emulator aborts a write
// that waited too long for a shard document's lock, the Go client does not retry Aborted on a plain
// commit, and the Increment entry point answers them 503 with Retry-After. They are counted rather
// than failing the benchmark, since this contention is what group commit avoids; any other error
// fails it, and so does an exact value other than the sum of the acknowledged increments.
func BenchmarkIncrementGuideMode(b *testing.B) {
	parallelism, goroutines := benchParallelism()
	b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
		benchmarkIncrement(b, 0, parallelism)
	})
}

// BenchmarkIncrementGroupCommit is BenchmarkIncrementGuideMode with group commit on: the concurrent
// increments of the counter share one shard write per interval, so commits/inc is far below 1, and
// ns/op is bounded below by the interval divided by the increments that share it.
func BenchmarkIncrementGroupCommit(b *testing.B) {
	parallelism, goroutines := benchParallelism()
	b.Run(fmt.Sprintf("interval=%s/goroutines=%d", benchGroupCommitInterval, goroutines), func(b *testing.B) {
		benchmarkIncrement(b, benchGroupCommitInterval, parallelism)
	})
}

// benchmarkIncrement runs b.N increments of one counter from parallelism×GOMAXPROCS goroutines
// through a Store with the given group commit interval (0: off), reports commits/inc and cpu-ns/op,
// and checks that the counter's exact value holds every acknowledged increment.
func benchmarkIncrement(b *testing.B, interval time.Duration, parallelism int) {
	ctx := context.Background()
	client, commits := testenv.FirestoreWithCommits(b)
	store := counter.NewStore(client, schema, counter.Options{
		DefaultNumShards:    10,
		ShardCountCacheTTL:  time.Hour, // the shard count is read once, before the timer starts
		GroupCommitInterval: interval,
	})
	const id = "likes"
	if _, err := store.Lifecycle.Configure(ctx, id, counter.Settings{NumShards: 10}); err != nil {
		b.Fatal(err)
	}
	var acked, aborted atomic.Int64
	if _, err := store.Increments.Increment(ctx, counter.Request{Counter: id, Delta: 1}); err != nil { // warms the client's connection
		b.Fatal(err)
	}
	acked.Add(1)
	before := len(commits())
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	cpuBefore := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, err := store.Increments.Increment(ctx, counter.Request{Counter: id, Delta: 1})
			switch {
			case err == nil:
				acked.Add(1)
			case status.Code(err) == codes.Aborted:
				aborted.Add(1)
			default:
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	cpu := processCPU(b) - cpuBefore
	made := len(commits()) - before
	b.ReportMetric(float64(made)/float64(b.N), "commits/inc")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(aborted.Load())/float64(b.N), "aborted/inc")
	if sum, err := store.Reader.Sum(ctx, id); err != nil {
		b.Fatal(err)
	} else if sum != acked.Load() {
		b.Fatalf("sum %d, want the %d acknowledged increments (%d aborted)", sum, acked.Load(), aborted.Load())
	}
}

// processCPU is the CPU time, user and system, that this process has used so far: every goroutine's,
// the Firestore client's and the garbage collector's included. It needs getrusage, hence this
// file's unix build constraint.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIncrementDistinctNewMembers measures counter.Increments.Increment of new members (each
// op a member never sent before) into one warm distinct counter with 10 shards and the day window,
// from benchGoroutines goroutines on the Firestore emulator. ns/op is wall time per member across
// all goroutines; each op reads the member's documents and its shard's fence, then commits their
// creation with the shard write and the fence's update.
func BenchmarkIncrementDistinctNewMembers(b *testing.B) {
	ctx := context.Background()
	store := counter.NewStore(testenv.Firestore(b), schema, counter.Options{DefaultNumShards: 10, ShardCountCacheTTL: time.Hour})
	yes := true
	if _, err := store.Lifecycle.Configure(ctx, "visitors", counter.Settings{NumShards: 10, Windows: []string{counter.WindowDay}, Distinct: &yes}); err != nil {
		b.Fatal(err)
	}
	parallelism, _ := benchParallelism()
	b.SetParallelism(parallelism)
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := store.Increments.Increment(ctx, counter.Request{Counter: "visitors", Member: fmt.Sprint("m", next.Add(1))}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	if got, err := store.Reader.Sum(ctx, "visitors"); err != nil || got != next.Load() {
		b.Errorf("visitors = %d (%v), want %d members", got, err, next.Load())
	}
}

// BenchmarkSumsAmongManyShards measures counter.Reader.SumsAt, the roll-up's pair of aggregation
// queries over one counter's 10 shards (in a read-only transaction), on the Firestore emulator,
// with 100 and 1,000 such counters in the database (1,000 and 10,000 documents in the shards
// collection group), one pair at a time and from about 16 goroutines. In production a query's cost
// does not depend on the other counters; the emulator scans the collection group for each query, so
// ns/op grows with every counter's shard documents (docs/performance.md, "Many warm counters,
// locally").
func BenchmarkSumsAmongManyShards(b *testing.B) {
	const shardsPerCounter = 10
	for _, counters := range []int{100, 1000} {
		ctx := context.Background()
		client := testenv.Firestore(b)
		store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: shardsPerCounter})
		writer := client.BulkWriter(ctx)
		for c := range counters {
			for s := range shardsPerCounter {
				shard := schema.ShardsRef(client, fmt.Sprint("c", c)).Doc(fmt.Sprint(s))
				if _, err := writer.Set(shard, map[string]any{"count": 1, "writes": 1}); err != nil {
					b.Fatal(err)
				}
			}
		}
		writer.End()
		at := time.Now() // after every shard's commit, on the emulator's clock (this machine's)
		var next atomic.Int64
		totals := func(b *testing.B) bool {
			id := fmt.Sprint("c", next.Add(1)%int64(counters))
			t, err := store.Reader.SumsAt(ctx, id, at, nil)
			if err == nil && t.Count != shardsPerCounter {
				err = fmt.Errorf("counter %s: count %d, want %d", id, t.Count, shardsPerCounter)
			}
			if err != nil {
				b.Error(err)
			}
			return err == nil
		}
		name := fmt.Sprintf("shards-in-database=%d", counters*shardsPerCounter)
		b.Run(name+"/goroutines=1", func(b *testing.B) {
			for b.Loop() {
				if !totals(b) {
					return
				}
			}
		})
		parallelism := (16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
		b.Run(fmt.Sprintf("%s/goroutines=%d", name, parallelism*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			b.SetParallelism(parallelism)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() && totals(b) {
				}
			})
		})
	}
}
