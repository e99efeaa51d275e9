package publisher_test

import (
	"context"
	"log"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/publisher"
)

// A backend publishes a like for a post. The key is made once per logical increment, so that a
// publish retried after an error still counts once.
func Example() {
	ctx := context.Background()
	p, err := publisher.New(ctx, "my-project", "") // "" is the counter-increments topic
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	key := publisher.NewKey()
	for attempt := 0; attempt < 3; attempt++ {
		if _, err = p.Publish(ctx, key, wire.Increment{Counter: "post-42-likes", Delta: 1}); err == nil {
			break
		}
	}
	if err != nil {
		log.Printf("like not published: %v", err)
	}
}

// Several increments in one message are applied together, all or nothing, and once.
func ExamplePublisher_Publish_batch() {
	ctx := context.Background()
	p, err := publisher.New(ctx, "my-project", "")
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	_, err = p.Publish(ctx, publisher.NewKey(),
		wire.Increment{Counter: "post-42-views", Delta: 1},
		wire.Increment{Counter: "site-views", Delta: 1},
	)
	if err != nil {
		log.Print(err)
	}
}
