package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/counters/internal/testenv"
)

// TestCollectionCounterFollowsTheAppsDocumentsOnTheStack writes and deletes like documents and paid
// orders in the stack's emulator (counter-sources.json declares both) and checks that Count and the
// roll-up reach count() and sum() of the documents, with no Increment call, and that the counter
// was made exact from documents that were there before its first event; the post's likes field
// mirrors its count.
func TestCollectionCounterFollowsTheAppsDocumentsOnTheStack(t *testing.T) {
	env := testenv.Stack(t)
	client := env.StackFirestore(t)
	ctx := context.Background()
	post, shop := testenv.UniqueID("post"), testenv.UniqueID("shop")
	if _, err := client.Collection("posts").Doc(post).Set(ctx, map[string]any{"title": "hello"}); err != nil {
		t.Fatal(err)
	}
	likes := client.Collection("posts").Doc(post).Collection("likes")
	orders := client.Collection("shops").Doc(shop).Collection("orders")
	// Likes there before the counter's first event make its base. The stack's bridge sees a document
	// only once it has found it by name, so a like the base holds but deleted before that would make
	// no event (Eventarc would): the racing writes below start after the base and leave these alone.
	for i := range 3 {
		if _, err := likes.Doc(fmt.Sprintf("early%d", i)).Set(ctx, map[string]any{"at": firestore.ServerTimestamp}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if exact, _ := countAndRollup(t, env.FunctionsURL, "likes-"+post); exact == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the counter did not start from the 3 likes there before its first event")
		}
	}
	for i := range 40 {
		doc := likes.Doc(fmt.Sprintf("u%d", rand.IntN(20)))
		var err error
		if rand.IntN(4) == 0 {
			_, err = doc.Delete(ctx)
		} else {
			_, err = doc.Set(ctx, map[string]any{"at": firestore.ServerTimestamp})
		}
		if err != nil {
			t.Fatal(err)
		}
		status := []string{"paid", "paid", "cart"}[rand.IntN(3)]
		if _, err := orders.Doc(fmt.Sprintf("o%d", i%15)).Set(ctx, map[string]any{"status": status, "amount": 1 + rand.IntN(50)}); err != nil {
			t.Fatal(err)
		}
	}
	wantLikes := aggregateOf(t, likes.NewAggregationQuery().WithCount("v"))
	paid := orders.Where("status", "==", "paid")
	wantRevenue := aggregateOf(t, paid.NewAggregationQuery().WithSum("amount", "v"))
	for _, c := range []struct {
		id   string
		want int64
	}{{"likes-" + post, wantLikes}, {"revenue-" + shop, wantRevenue}} {
		deadline := time.Now().Add(30 * time.Second)
		var exact, rolled int64
		for time.Now().Before(deadline) {
			exact, rolled = countAndRollup(t, env.FunctionsURL, c.id)
			if exact == c.want && rolled == c.want {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if exact != c.want || rolled != c.want {
			t.Errorf("%s: Count says %d, its roll-up %d; Firestore's aggregation of its documents says %d", c.id, exact, rolled, c.want)
		}
	}
	// The declaration mirrors the likes into the post, and writes nothing else of it.
	var got map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		snap, err := client.Collection("posts").Doc(post).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got = snap.Data(); got["like_count"] == wantLikes {
			break
		}
	}
	if got["like_count"] != wantLikes || got["title"] != "hello" || len(got) != 2 {
		t.Errorf("posts/%s = %v, want its title and like_count: %d", post, got, wantLikes)
	}
}

func aggregateOf(t *testing.T, q *firestore.AggregationQuery) int64 {
	t.Helper()
	res, err := q.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res["v"].(*firestorepb.Value).GetIntegerValue()
}

// countAndRollup asks the stack's Count for a counter's exact value and its roll-up's count.
func countAndRollup(t *testing.T, functionsURL, id string) (exact, rolled int64) {
	t.Helper()
	resp, err := http.Get(functionsURL + "/Count?counter=" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Count  int64 `json:"count"`
		Rollup *struct {
			Count int64 `json:"count"`
		} `json:"rollup"`
	}
	if resp.StatusCode != http.StatusOK {
		return -1, -1
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Rollup == nil {
		return body.Count, -1
	}
	return body.Count, body.Rollup.Count
}

// TestFieldCounterOnTheStackRanksItsValues: votes written to the stack's emulator as a flat
// collection (web/counter-sources.json counts them per poll and choice, in group "polls") make a
// counter per choice whose Count and roll-up equal count() of that choice's votes, after a vote
// changes its choice, and the group's top list ranks the choices.
func TestFieldCounterOnTheStackRanksItsValues(t *testing.T) {
	env := testenv.Stack(t)
	client := env.StackFirestore(t)
	ctx := context.Background()
	poll := fmt.Sprintf("poll%d", rand.Int64())
	votes := client.Collection("votes")
	for i, choice := range []string{"yes", "yes", "yes", "no"} {
		if _, err := votes.Doc(fmt.Sprintf("%s_u%d", poll, i)).Set(ctx, map[string]any{"poll": poll, "choice": choice}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := votes.Doc(poll+"_u0").Set(ctx, map[string]any{"poll": poll, "choice": "no"}); err != nil { // a changed vote
		t.Fatal(err)
	}
	for choice, want := range map[string]int64{"yes": 2, "no": 2} {
		id := "poll-" + poll + "-" + choice
		q := votes.Where("poll", "==", poll).Where("choice", "==", choice)
		if n := aggregateOf(t, q.NewAggregationQuery().WithCount("v")); n != want {
			t.Fatalf("count() of %s: %d, want %d", choice, n, want)
		}
		var exact, rolled int64
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if exact, rolled = countAndRollup(t, env.FunctionsURL, id); exact == want && rolled == want {
				break
			}
		}
		if exact != want || rolled != want {
			t.Errorf("%s: Count says %d, its roll-up %d; want %d", id, exact, rolled, want)
		}
	}
	var top []any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		snap, err := client.Collection("tops").Doc("polls_all").Get(ctx)
		if err == nil {
			top, _ = snap.Data()["top"].([]any)
		}
		if ranked(top, "poll-"+poll+"-yes", 2) && ranked(top, "poll-"+poll+"-no", 2) {
			return
		}
	}
	t.Errorf("tops/polls_all = %v; want both choices of %s with 2 each", top, poll)
}

// ranked reports whether top lists counter with count n.
func ranked(top []any, counter string, n int64) bool {
	for _, e := range top {
		if m, _ := e.(map[string]any); m["counter"] == counter && m["count"] == n {
			return true
		}
	}
	return false
}
