package counter_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
)

// TestLedgerNoHotDocumentAcrossInstances: 4 instances, each committing a collection counter's
// changes once a second, apply its changes of two ledger seconds for 5 s, a quarter of the deliveries
// a change delivered before (or in flight) on any instance. The counter is exact, each change counted
// once, and no ledger document takes two writes within one second.
func TestLedgerNoHotDocumentAcrossInstances(t *testing.T) {
	const id = "ledger-hot"
	clients, commits := testenv.FirestoreInstancesWithCommits(t, 4)
	stores := make([]*counter.Store, len(clients))
	for i, client := range clients {
		stores[i] = counter.NewStore(client, schema, counter.Options{DefaultNumShards: 3, ShardCountCacheTTL: time.Minute,
			ChangeCommitInterval: time.Second, DedupeTTL: time.Hour})
		t.Cleanup(func() { _ = stores[i].Close(context.Background()) })
	}
	second := time.Now().Truncate(time.Second)
	base := counter.Baseline{Source: "items/{item}", ValueAt: func(context.Context, time.Time) (int64, error) { return 0, nil }}
	if err := stores[0].EstablishBase(context.Background(), id, base); err != nil {
		t.Fatal(err) // now: ValueAt's 0 holds for no later base
	}
	notInBase := func(context.Context, time.Time) (bool, error) { return false, nil }
	type change struct {
		key   string
		delta int64
		at    time.Time
	}
	var (
		mu      sync.Mutex
		made    []change
		counted int
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				mu.Lock()
				var ch change
				if len(made) > 0 && rand.IntN(4) == 0 {
					ch = made[rand.IntN(len(made))]
				} else {
					ch = change{key: fmt.Sprintf("g%d-%d", g, n), delta: 1 + rand.Int64N(3), at: second.Add(time.Duration(rand.IntN(2)) * time.Second)}
					made = append(made, ch)
				}
				mu.Unlock()
				req := counter.Request{Counter: id, Delta: ch.delta, At: ch.at,
					Change: &counter.Change{Key: ch.key, Bucket: ch.at, InBase: notInBase, Baseline: base}}
				for attempt := 1; ; attempt++ {
					res, err := stores[rand.IntN(len(stores))].Apply(context.Background(), req)
					if err == nil {
						mu.Lock()
						if res.Counted {
							counted++
						}
						mu.Unlock()
						break
					}
					if attempt == 10 {
						t.Errorf("apply %s: %v", ch.key, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	var want int64
	for _, ch := range made {
		want += ch.delta
	}
	if got := sum(t, stores[0], id); got != want || counted != len(made) {
		t.Errorf("value %d, counted %d of %d changes: want %d, each counted once", got, counted, len(made), want)
	}
	isLedger := func(doc string) bool { return strings.Contains(doc, "/"+shared.ChangeLedgerCollection+"/") }
	var ledgerDocs, ledgerWrites int
	for _, c := range commits() {
		for _, doc := range c.Docs {
			if isLedger(doc) {
				ledgerWrites++
			}
		}
	}
	for _, w := range commitlog.BusiestWindows(commits(), time.Time{}, time.Now().Add(time.Hour), time.Second) {
		if !isLedger(w.Doc) {
			continue
		}
		ledgerDocs++
		if w.Writes > 1 {
			t.Errorf("%s: %d writes in the second from %s, want at most 1", w.Doc, w.Writes, w.Start.Format("15:04:05.000"))
		}
	}
	if ledgerDocs == 0 {
		t.Fatal("no ledger document written")
	}
	t.Logf("%d changes, %d ledger writes on %d documents", len(made), ledgerWrites, ledgerDocs)
}
