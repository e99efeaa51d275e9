package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"

	"google.golang.org/api/option"

	"github.com/shardcount/counters/client"
)

// A backend on Google Cloud (or with a service account's Application Default Credentials) calls the
// deployed, private functions with ID tokens; its service account needs roles/run.invoker on them
// (deploy.sh --invoker, Terraform's http_invokers).
func Example() {
	ctx := context.Background()
	c, err := client.New(ctx, client.WithEndpoints(client.CloudFunctions("us-central1", "my-project")))
	if err != nil {
		log.Fatal(err)
	}
	// The order's key (a UUID made with the order): however often this line runs for it, it counts once.
	if _, err := c.Increment(ctx, client.Increment{Counter: "likes", Delta: 1, Key: "5f0c6a8e-2b1d-4e7a-9c3f-8d4b2a1e6f70"}); err != nil {
		log.Fatal(err)
	}
	n, err := c.Count(ctx, "likes")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n.Count)
}

// The local stack (make run) checks no IAM, and http:// endpoints get no ID token: no credentials
// are needed.
func Example_local() {
	ctx := context.Background()
	c, err := client.New(ctx, option.WithEndpoint("http://127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	inc, err := c.Increment(ctx, client.Increment{Counter: "likes"}) // the client makes the key
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(inc.Shard, inc.Key)
}

// What each error of Increment means.
func ExampleClient_Increment() {
	ctx := context.Background()
	c, err := client.New(ctx, option.WithEndpoint("http://127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Increment(ctx, client.Increment{Counter: "views", Delta: 3, Key: "9b2e4d71-3c5a-4f08-a6e2-1d7c8b9f0a34"})
	var (
		unknown *client.OutcomeUnknownError
		refused *client.Error
	)
	switch {
	case err == nil:
		// counted exactly once
	case errors.As(err, &unknown):
		// It may or may not have counted: keep the key and send it again later; it counts at most once.
		log.Printf("retry later with key %s: %v", unknown.Key, err)
	case errors.As(err, &refused) && refused.Status == http.StatusServiceUnavailable:
		// Not counted: the functions stayed busy through every attempt.
		log.Printf("not counted; retry after %s", refused.RetryAfter)
	case errors.As(err, &refused):
		// Not counted: the request is wrong (refused.Field says which field) and needs a fix.
		log.Printf("refused: %s", refused.Message)
	default:
		log.Print(err) // no URL for Increment, or the context ended before the first attempt or after 503s: not counted
	}
}

// A counter that adapts its shard count, counts per day and ranks in a group's top list.
func ExampleClient_ConfigureCounter() {
	ctx := context.Background()
	c, err := client.New(ctx, option.WithEndpoint("http://127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	minShards, windows, group := 10, []string{"day"}, "posts"
	cfg, err := c.ConfigureCounter(ctx, client.Settings{Counter: "post-1", MinShards: &minShards, Windows: &windows, Group: &group})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.NumShards, cfg.Adaptive)
}

// Today's five most counted posts.
func ExampleClient_Top() {
	ctx := context.Background()
	c, err := client.New(ctx, option.WithEndpoint("http://127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	top, err := c.Top(ctx, client.TopQuery{Group: "posts", Window: "day", Limit: 5})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range top.Top {
		fmt.Println(e.Counter, e.Count)
	}
}

// A refusal carries the API's status, message and field.
func ExampleError() {
	err := fmt.Errorf("increment %q: %w", "likes", &client.Error{Status: 400, Field: "delta", Message: "delta must not be 0"})
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Field)
	}
	// Output: 400 delta
}
