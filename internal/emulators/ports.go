package emulators

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
)

// Ports for the stack's servers are chosen below the kernel's ephemeral range, where a port the
// kernel gives to an outgoing connection can never land. A port that is free when chosen is only
// bound later, by the process it is passed to; in the ephemeral range, the many connections a loaded
// test run opens take such ports in between often enough to fail a run ("address already in use").
const (
	// lowestPort is where the range ports are drawn from begins: above the well-known ports and
	// the ones servers on a developer's machine commonly take.
	lowestPort = 20000
	// ephemeralRange is where Linux says which ports it gives to outgoing connections.
	ephemeralRange = "/proc/sys/net/ipv4/ip_local_port_range"
	// defaultEphemeralStart is Linux's default start of that range, used when it cannot be read.
	defaultEphemeralStart = 32768
	// portTries bounds the draws before falling back to a port the kernel picks.
	portTries = 100
)

// FreePort returns a loopback port that was free a moment ago, outside the ports the kernel gives to
// outgoing connections when it can.
func FreePort() (string, error) {
	if top := ephemeralStart(); top > lowestPort {
		for range portTries {
			port := strconv.Itoa(lowestPort + rand.IntN(top-lowestPort))
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port)); err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	var start, end int
	b, err := os.ReadFile(ephemeralRange)
	if err != nil {
		return defaultEphemeralStart
	}
	if _, err := fmt.Sscan(string(b), &start, &end); err != nil {
		return defaultEphemeralStart
	}
	return start
}
