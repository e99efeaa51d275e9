package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// runWithin runs publish with args and fails t unless it returns an error within limit.
func runWithin(t *testing.T, limit time.Duration, args ...string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), args) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("publish succeeded, want an error")
		}
		return err
	case <-time.After(limit):
		t.Fatalf("publish %v did not give up within %s", args, limit)
		return nil
	}
}

// wantsHostAndHint fails t unless err names host and says which settings point at the emulator.
func wantsHostAndHint(t *testing.T, err error, host string) {
	t.Helper()
	for _, want := range []string{host, "PUBSUB_PORT", "PUBSUB_EMULATOR_HOST"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestClosedEmulatorPortIsNamed: with PUBSUB_EMULATOR_HOST at a port nothing listens on, publish
// gives up at once, naming the address.
func TestClosedEmulatorPortIsNamed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close()
	t.Setenv("PUBSUB_EMULATOR_HOST", host)
	wantsHostAndHint(t, runWithin(t, 10*time.Second, "likes"), host)
}

// TestSilentEmulatorPortGivesUp: with PUBSUB_EMULATOR_HOST at a port that accepts connections but
// never answers, publish gives up after publishTimeout, naming the address.
func TestSilentEmulatorPortGivesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	defer func(d time.Duration) { publishTimeout = d }(publishTimeout)
	publishTimeout = 500 * time.Millisecond
	host := l.Addr().String()
	t.Setenv("PUBSUB_EMULATOR_HOST", host)
	wantsHostAndHint(t, runWithin(t, 10*time.Second, "likes"), host)
}
