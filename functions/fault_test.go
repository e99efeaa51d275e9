package functions_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/faultproxy"
	"github.com/shardcount/counters/internal/testenv"
)

// faultClients is what the clients of TestIncrementUnderFaultsCountsExactlyWhatWasAcknowledged saw.
type faultClients struct {
	keyedAcked, plainAcked     atomic.Int64 // increments answered 200
	plainUnknown               atomic.Int64 // unkeyed increments answered 504: may or may not count
	retried503, retriedUnknown atomic.Int64 // requests sent again after a 503, after a 504 (keyed only)
	statuses                   sync.Map     // status -> *atomic.Int64
}

func (c *faultClients) saw(status int) {
	n, _ := c.statuses.LoadOrStore(status, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

// post sends one Increment request and returns its status (0 when the request itself failed).
func post(srv *testServer, id, key string) int {
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/Increment", strings.NewReader(fmt.Sprintf(`{"counter":%q}`, id)))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(wire.HeaderIdempotencyKey, key)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestIncrementUnderFaultsCountsExactlyWhatWasAcknowledged puts the fault proxy between the
// functions and the Firestore emulator: at each rate, that share of the requests that touch the
// dedupe collection (every commit creates a write record there; fences and read-backs go there too)
// is reset before it arrives, or has its response lost after it applied. Clients retry as docs/api.md
// tells them: a 503 is sent again; a 504 (outcome unknown) only when it carries an Idempotency-Key.
// Keyed counters end exactly at what was acknowledged; unkeyed ones at least at it and at most
// at it plus the 504s (which say the outcome is unknown), so a 503 that was in fact applied, or a
// 200 counted twice, fails the test.
func TestIncrementUnderFaultsCountsExactlyWhatWasAcknowledged(t *testing.T) {
	const clients, perClient, maxTries = 8, 20, 30
	dedupe := []byte(config.Default().Schema().Dedupe + "/")
	for _, tc := range []struct {
		name   string
		faults faultproxy.Faults
		// requestTimeout, when set, is shorter than a commit through the proxy's delay: increments
		// waiting for the next group write give up and are answered 503.
		requestTimeout time.Duration
	}{
		{name: "none"},
		{name: "5% lost", faults: faultproxy.Faults{ResetRate: 0.025, DropResponseRate: 0.025, Match: dedupe}},
		{name: "20% lost", faults: faultproxy.Faults{ResetRate: 0.1, DropResponseRate: 0.1, Match: dedupe}},
		{name: "50% lost", faults: faultproxy.Faults{ResetRate: 0.25, DropResponseRate: 0.25, Match: dedupe}},
		{name: "slow, requests time out", faults: faultproxy.Faults{Delay: 100 * time.Millisecond, DropResponseRate: 0.1, Match: dedupe}, requestTimeout: 150 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := testenv.FirestoreBehindFaultProxy(t)
			proxy, commits := db.Proxy, db.Commits
			cfg := config.Default()
			if tc.requestTimeout > 0 {
				cfg.RequestTimeout = tc.requestTimeout
			}
			srv := newTestServerWithClient(t, cfg, db.Client)
			exact := counter.NewStore(db.Direct, config.Default().Schema(), counter.Options{})
			srv.increment(t, "keyed", 1) // create both counters before the faults
			srv.increment(t, "plain", 1)
			before := len(commits())
			proxy.SetFaults(tc.faults)

			var seen faultClients
			var wg sync.WaitGroup
			for c := range clients {
				wg.Go(func() {
					for i := range perClient {
						keyed := c%2 == 0
						key, id := "", "plain"
						if keyed {
							key, id = uuid.NewString(), "keyed"
						}
						for try := 1; ; try++ {
							status := post(srv, id, key)
							seen.saw(status)
							switch {
							case status == http.StatusOK && keyed:
								seen.keyedAcked.Add(1)
							case status == http.StatusOK:
								seen.plainAcked.Add(1)
							case status == http.StatusServiceUnavailable && try < maxTries:
								seen.retried503.Add(1)
								continue
							case status == http.StatusGatewayTimeout && keyed && try < maxTries:
								seen.retriedUnknown.Add(1)
								continue
							case status == http.StatusGatewayTimeout:
								seen.plainUnknown.Add(1)
							default:
								t.Errorf("client %d increment %d: status %d after %d tries", c, i, status, try)
							}
							break
						}
					}
				})
			}
			wg.Wait()
			proxy.SetFaults(faultproxy.Faults{})
			made := commits()[before:]

			keyedSum, err := exact.Reader.Sum(ctx, "keyed")
			if err != nil {
				t.Fatal(err)
			}
			plainSum, err := exact.Reader.Sum(ctx, "plain")
			if err != nil {
				t.Fatal(err)
			}
			keyedSum, plainSum = keyedSum-1, plainSum-1 // the increments made before the faults
			if keyedSum != seen.keyedAcked.Load() {
				t.Errorf("keyed counter = %d, acknowledged %d: want equal", keyedSum, seen.keyedAcked.Load())
			}
			if lo, hi := seen.plainAcked.Load(), seen.plainAcked.Load()+seen.plainUnknown.Load(); plainSum < lo || plainSum > hi {
				t.Errorf("unkeyed counter = %d, want from %d (acknowledged) to %d (plus outcomes unknown)", plainSum, lo, hi)
			}
			docs := 0
			for _, c := range made {
				docs += len(c.Docs)
			}
			acked := seen.keyedAcked.Load() + seen.plainAcked.Load()
			statuses := map[int]int64{}
			seen.statuses.Range(func(k, v any) bool { statuses[k.(int)] = v.(*atomic.Int64).Load(); return true })
			counts := proxy.Counts()
			t.Logf("faults %s: %d increments acknowledged (keyed %d = exact %d; unkeyed %d, exact %d, %d answered unknown); "+
				"retries: %d after 503, %d keyed after 504; statuses %v; proxy: %d resets, %d responses dropped; "+
				"%d documents in %d confirmed commits = %.0f documents per 1,000 acknowledged increments (commits whose answer was lost are not in the log)",
				tc.name, acked, seen.keyedAcked.Load(), keyedSum, seen.plainAcked.Load(), plainSum, seen.plainUnknown.Load(),
				seen.retried503.Load(), seen.retriedUnknown.Load(), statuses, counts.Resets, counts.DroppedResponses,
				docs, len(made), 1000*float64(docs)/float64(max(acked, 1)))
		})
	}
}
