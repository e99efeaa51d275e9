// Command publish publishes one message of increments for IncrementFromPubSub, to the emulator when
// PUBSUB_EMULATOR_HOST is set. See docs/api.md.
//
//	publish [-project P] [-topic T] [-key K] [-times N] COUNTER[:DELTA]...
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/publisher"
	"github.com/shardcount/counters/shared"
)

// localProject is the emulator's default project.
const localProject = "demo-counters"

// Timeouts of reaching the emulator and of each publish (variables for tests).
var (
	dialTimeout    = 3 * time.Second
	publishTimeout = 30 * time.Second
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "publish:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("publish", flag.ContinueOnError)
	project := flags.String("project", os.Getenv("GOOGLE_CLOUD_PROJECT"), "Google Cloud project (default $GOOGLE_CLOUD_PROJECT, or "+localProject+" on the emulator)")
	topic := flags.String("topic", shared.TopicIncrements, "topic ID")
	key := flags.String("key", "", "idempotency key: messages with the same key count once (default: none, the message ID dedupes redeliveries only)")
	times := flags.Int("times", 1, "publish the message this many times, as a retrying publisher would")
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), "usage: publish [flags] COUNTER[:DELTA]...")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return err
	}
	emulator := os.Getenv("PUBSUB_EMULATOR_HOST")
	if emulator != "" {
		*project = cmp.Or(*project, localProject)
	}
	if *project == "" {
		return errors.New("no project: pass -project or set GOOGLE_CLOUD_PROJECT (or PUBSUB_EMULATOR_HOST for the emulator)")
	}
	if *times < 1 {
		return fmt.Errorf("-times %d: must be at least 1", *times)
	}
	incs, err := parseIncrements(flags.Args())
	if err != nil {
		return err
	}
	if _, err := publisher.Message(*key, incs...); err != nil { // validate before connecting
		return err
	}
	if emulator != "" {
		if err := checkEmulator(emulator); err != nil {
			return err
		}
	}
	p, err := publisher.New(ctx, *project, *topic)
	if err != nil {
		return err
	}
	for range *times {
		pctx, cancel := context.WithTimeout(ctx, publishTimeout)
		id, err := p.Publish(pctx, *key, incs...)
		cancel()
		if err != nil {
			// No Close: it would wait for the unanswered publish.
			if emulator != "" && errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("no answer from the Pub/Sub emulator at %s within %s: %w\n%s", emulator, publishTimeout, err, emulatorHint)
			}
			return err
		}
		fmt.Printf("published message %s to projects/%s/topics/%s key=%q increments=%v\n", id, *project, *topic, *key, incs)
	}
	return p.Close()
}

// emulatorHint says how to reach the local stack's emulator.
const emulatorHint = "Is the local stack running (make run)? Set PUBSUB_PORT (make publish) or PUBSUB_EMULATOR_HOST (go run ./cmd/publish) to the port of its Pub/Sub emulator; the stack prints it at start-up (pubsub=HOST:PORT)."

// checkEmulator returns an error unless host accepts a TCP connection within dialTimeout.
func checkEmulator(host string) error {
	c, err := net.DialTimeout("tcp", host, dialTimeout)
	if err != nil {
		return fmt.Errorf("the Pub/Sub emulator is not reachable at %s (PUBSUB_EMULATOR_HOST): %w\n%s", host, err, emulatorHint)
	}
	return c.Close()
}

// parseIncrements reads COUNTER[:DELTA] arguments; the delta follows the last colon.
func parseIncrements(args []string) ([]wire.Increment, error) {
	if len(args) == 0 {
		return nil, errors.New("give at least one COUNTER[:DELTA]")
	}
	incs := make([]wire.Increment, len(args))
	for i, arg := range args {
		inc := wire.Increment{Counter: arg, Delta: 1}
		if at := strings.LastIndex(arg, ":"); at >= 0 {
			d, err := strconv.ParseInt(arg[at+1:], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: the delta after the last ':' must be an integer", arg)
			}
			inc = wire.Increment{Counter: arg[:at], Delta: d}
		}
		incs[i] = inc
	}
	return incs, nil
}
