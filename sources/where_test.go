package sources_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/sources"
)

// TestListedFiltersCountWhatTheirQuerySums: a sum declared with the list form of where (in and a
// range) equals Firestore's sum() under the same filters while orders move into and out of them,
// their events duplicated and reordered over two instances.
func TestListedFiltersCountWhatTheirQuerySums(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	set, err := sources.Parse([]byte(`[{"documents": "shops/{shop}/orders/{order}", "counter": "big-{shop}", "sum": "amount",
	  "where": [["status", "in", ["paid", "shipped"]], ["amount", ">=", 100]]}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	a, b := instance(t, id, set), instance(t, id, set)
	w := newWriter(t, client)
	statuses := []string{"paid", "shipped", "cart", "refunded"}
	for range 60 {
		path := fmt.Sprintf("shops/s1/orders/o%d", rand.IntN(8))
		if rand.IntN(6) == 0 {
			w.set(path, nil)
			continue
		}
		w.set(path, map[string]any{"status": statuses[rand.IntN(len(statuses))], "amount": 50 + rand.IntN(100)})
	}
	deliver(t, w.writes, a, b)
	q := client.Collection("shops/s1/orders").Where("status", "in", []any{"paid", "shipped"}).Where("amount", ">=", 100)
	res, err := q.NewAggregationQuery().WithSum("amount", "v").Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := res["v"].(*firestorepb.Value).GetIntegerValue()
	if got := sumOf(t, client)("big-s1"); got != want {
		t.Errorf("big-s1 = %d; sum(amount) where status in [paid shipped] and amount >= 100 = %d", got, want)
	}
}
