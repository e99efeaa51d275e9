package sources_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/sources"
)

const byField = `[
  {"documents": "likes/{like}", "counter": "likes-{field:postId}"},
  {"documents": "polls/{poll}/votes/{vote}", "counter": "poll-{poll}-{field:choice}"}
]`

// postIDs are the values likes take: strings, an integer, and a string of the same digits.
var postIDs = []any{"p1", "p2", "a/b c", 7, "7"}

// TestFieldCountersMoveDocumentsExactly: likes in a flat collection, counted per postId, and votes
// per choice, while updates move them between values, delete them and drop the field, their
// events duplicated and reordered over two instances: each value's counter equals count() where
// the field equals that value, and the string "7" and the integer 7 keep counters of their own.
func TestFieldCountersMoveDocumentsExactly(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	set, err := sources.Parse([]byte(byField), schema)
	if err != nil {
		t.Fatal(err)
	}
	a, b := instance(t, id, set), instance(t, id, set)
	w := newWriter(t, client)
	w.set("likes/seed", map[string]any{"postId": "p1"}) // the base of likes-p1
	deliver(t, w.writes, a)
	for range 80 {
		like := fmt.Sprintf("likes/l%d", rand.IntN(12))
		vote := fmt.Sprintf("polls/q1/votes/u%d", rand.IntN(8))
		switch rand.IntN(6) {
		case 0:
			w.set(like, nil)
		case 1:
			w.set(like, map[string]any{"other": 1}) // no postId: counted nowhere
		default:
			w.set(like, map[string]any{"postId": postIDs[rand.IntN(len(postIDs))]})
		}
		if rand.IntN(5) == 0 {
			w.set(vote, nil)
		} else {
			w.set(vote, map[string]any{"choice": []string{"yes", "no"}[rand.IntN(2)]})
		}
	}
	deliver(t, w.writes, a, b)
	ctx := context.Background()
	store := counter.NewStore(client, schema, counter.Options{DefaultNumShards: 3})
	sums := func(id string) int64 { // a value no document ever held has no counter: 0
		n, err := store.Reader.Sum(ctx, id)
		if err != nil && !errors.Is(err, counter.ErrNotFound) {
			t.Fatal(err)
		}
		return n
	}
	for _, v := range postIDs {
		value := v
		if n, ok := v.(int); ok {
			value = int64(n)
		}
		q := client.Collection("likes").Where("postId", "==", value)
		res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := res["n"].(*firestorepb.Value).GetIntegerValue()
		counterID := "likes-" + map[any]string{"p1": "p1", "p2": "p2", "a/b c": "a%2Fb%20c", 7: "%i7", "7": "7"}[v]
		if got := sums(counterID); got != want {
			t.Errorf("%s = %d; count() where postId == %#v = %d", counterID, got, v, want)
		}
		if want == 0 {
			continue // perhaps never made
		}
		if d, err := a.Verify(ctx, counterID, time.Now()); err != nil || d.Value != d.Documents {
			t.Errorf("verify %s: %+v %v", counterID, d, err)
		}
	}
	for _, choice := range []string{"yes", "no"} {
		q := client.Collection("polls/q1/votes").Where("choice", "==", choice)
		res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sums("poll-q1-"+choice), res["n"].(*firestorepb.Value).GetIntegerValue(); got != want {
			t.Errorf("poll-q1-%s = %d; count() = %d", choice, got, want)
		}
	}
}

// TestBackfillMakesACounterPerValue: likes written before their declaration get, from one
// backfill, a counter for each postId they hold, each equal to its count().
func TestBackfillMakesACounterPerValue(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	set, err := sources.Parse([]byte(byField), schema)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, client)
	for i, post := range []any{"p1", "p1", "p2", 7, "7", 7} {
		w.set(fmt.Sprintf("likes/l%d", i), map[string]any{"postId": post})
	}
	w.set("likes/none", map[string]any{"postId": 1.5}) // a double builds no counter
	var made []string
	if _, err := instance(t, id, set).Backfill(context.Background(), []string{"likes-{field:postId}"}, "", func(counter, _ string) { made = append(made, counter) }); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"likes-p1": 2, "likes-p2": 1, "likes-%i7": 2, "likes-7": 1}
	if len(made) != len(want) {
		t.Errorf("backfill made %q, want the counters of %v", made, want)
	}
	sums := sumOf(t, client)
	for counterID, n := range want {
		if got := sums(counterID); got != n {
			t.Errorf("%s = %d, want %d", counterID, got, n)
		}
		// The base's correction is a shard write like any: the sweep finds it by this stamp, should
		// the roll-up trigger's event be lost.
		if snap, err := client.Doc("counters/" + counterID).Get(context.Background()); err != nil || snap.Data()[shared.FieldTouchedMinute] == nil {
			t.Errorf("%s has no %s after its base (%v): the sweep would never roll it up", counterID, shared.FieldTouchedMinute, err)
		}
	}
}

// TestAMirrorByAFieldValueNamesThatValuesDocument: a mirror built from the counter field goes to
// the document of the like's postId, the integer's decimal digits included.
func TestAMirrorByAFieldValueNamesThatValuesDocument(t *testing.T) {
	id := testenv.Project(t)
	client := testenv.FirestoreOf(t, id)
	set, err := sources.Parse([]byte(`[{"documents": "likes/{like}", "counter": "likes-{field:postId}", "mirror": "posts/{field:postId}.likes"}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, client)
	w.set("likes/a", map[string]any{"postId": "p1"})
	w.set("likes/b", map[string]any{"postId": 7})
	deliver(t, w.writes, instance(t, id, set))
	for counterID, want := range map[string]string{"likes-p1": "posts/p1", "likes-%i7": "posts/7"} {
		snap, err := client.Doc("counters/" + counterID).Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := snap.Data()[shared.FieldMirrorDocument]; got != want {
			t.Errorf("%s mirrors into %v, want %s", counterID, got, want)
		}
	}
}
