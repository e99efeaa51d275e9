//go:build unix

package functions_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/testenv"
)

// benchGoroutines is about how many goroutines call the handler at once in BenchmarkIncrementHandler,
// as in the counter package's benchmarks. The exact number is a multiple of GOMAXPROCS
// (b.SetParallelism) and is in the benchmark's name.
const benchGoroutines = 64

// benchGroupCommitInterval is the group commit interval of BenchmarkIncrementHandler's group commit
// case: shorter than the production default so that a run of -benchtime 2000x takes about a second.
const benchGroupCommitInterval = 20 * time.Millisecond

// BenchmarkIncrementHandler measures the whole Increment entry point as the platform calls it, minus
// the network: svc.Increment serves each request into an httptest.ResponseRecorder, so the figures
// are the handler's own (method check, strict JSON decoding, validation, counter.Increments.Increment,
// JSON answer) plus the Firestore client's, over the emulator. About benchGoroutines goroutines
// increment one warm counter, with group commit off ("guide", one write per increment) and on.
//
// ns/op is wall time per request across all goroutines; B/op and allocs/op are this process's
// allocations per request, the response recorder's included (a few hundred bytes; each goroutine
// reuses one request, so building requests costs nothing); cpu-ns/op is this process's CPU time
// (user + system, from getrusage) per request. The handler's cost without Firestore is
// BenchmarkDecodeAndValidate's.
//
// 503/op is the share of requests answered 503: in guide mode, 64 concurrent writers of a 10-shard
// counter make the emulator abort some writes that waited too long for a shard's lock (see
// BenchmarkIncrementGuideMode in the counter package). They are counted; any other answer but 200
// fails the benchmark.
func BenchmarkIncrementHandler(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	parallelism := (benchGoroutines + procs - 1) / procs
	for _, c := range []struct {
		name     string
		interval time.Duration
	}{
		{"guide", 0},
		{fmt.Sprintf("groupcommit/interval=%s", benchGroupCommitInterval), benchGroupCommitInterval},
	} {
		b.Run(fmt.Sprintf("%s/goroutines=%d", c.name, parallelism*procs), func(b *testing.B) {
			cfg := config.Default()
			cfg.GroupCommitInterval = c.interval
			cfg.ShardCountCacheTTL = time.Hour // the shard count is read once, before the timer starts
			svc := functions.NewService(cfg, testenv.Firestore(b), cloudlog.New(io.Discard, slog.LevelInfo))
			body := []byte(`{"counter":"likes","delta":1}`)
			// Creates the counter by its first increment and caches its shard count.
			if rec := newReusableRequest(body).serve(svc); rec.Code != http.StatusOK {
				b.Fatalf("warm-up increment: %d %s", rec.Code, rec.Body)
			}
			var unavailable atomic.Int64
			b.SetParallelism(parallelism)
			b.ReportAllocs()
			cpuBefore := processCPU(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req := newReusableRequest(body)
				for pb.Next() {
					switch rec := req.serve(svc); rec.Code {
					case http.StatusOK:
					case http.StatusServiceUnavailable:
						unavailable.Add(1)
					default:
						b.Errorf("increment: %d %s", rec.Code, rec.Body)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((processCPU(b)-cpuBefore).Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(unavailable.Load())/float64(b.N), "503/op")
		})
	}
}

// BenchmarkDecodeAndValidate measures what the Increment handler does before any database call:
// method check, Content-Type check, strict JSON decoding, validation, and the JSON error answer. Its
// request has delta 0, which validation refuses with 400, so the handler returns before it reaches
// Firestore: the Service has no Firestore client at all (nil), so a database call would panic, and
// the figures are the handler's CPU and allocations with zero I/O, the response recorder's included
// (the request is reused). cpu-ns/op is this process's CPU time (user + system) per request.
func BenchmarkDecodeAndValidate(b *testing.B) {
	svc := functions.NewService(config.Default(), nil, cloudlog.New(io.Discard, slog.LevelInfo))
	req := newReusableRequest([]byte(`{"counter":"likes","delta":0}`))
	if rec := req.serve(svc); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"delta"`) {
		b.Fatalf("got %d %s, want 400 blaming delta", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	cpuBefore := processCPU(b)
	for b.Loop() {
		if rec := req.serve(svc); rec.Code != http.StatusBadRequest {
			b.Fatalf("got %d %s, want 400", rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpuBefore).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// reusableRequest is a JSON POST to Increment that can be served again and again, so that a
// benchmark measures the handler rather than the building of requests (httptest.NewRequest alone
// allocates a 4 KB read buffer). One goroutine at a time may serve it: the handler neither keeps nor
// changes the request, and serve rewinds its body.
type reusableRequest struct {
	req  *http.Request
	body rewindableBody
	data []byte
}

// rewindableBody is a request body that serve rewinds to its start.
type rewindableBody struct{ bytes.Reader }

func (*rewindableBody) Close() error { return nil }

func newReusableRequest(body []byte) *reusableRequest {
	req := httptest.NewRequest(http.MethodPost, "/"+functions.EntryIncrement, nil)
	req.Header.Set("Content-Type", "application/json")
	r := &reusableRequest{req: req, data: body}
	req.Body = &r.body
	req.ContentLength = int64(len(body))
	return r
}

// serve serves the request to svc.Increment without a network and returns the answer.
func (r *reusableRequest) serve(svc *functions.Service) *httptest.ResponseRecorder {
	r.body.Reset(r.data)
	rec := httptest.NewRecorder()
	svc.Increment(rec, r.req)
	return rec
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
