package emulators

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
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

// handedOut holds every port FreePort returned in this process. A port handed out is bound later,
// by the process it is passed to, so until then a fresh draw could return it again: a stack that
// drew two equal ports would fail to start, or worse, run two servers' clients against one.
var handedOut = struct {
	sync.Mutex
	ports map[string]bool
}{ports: make(map[string]bool)}

// FreePort returns a loopback port that was free a moment ago and that no earlier call in this
// process returned, outside the ports the kernel gives to outgoing connections when it can.
func FreePort() (string, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if top := ephemeralStart(); top > lowestPort {
		for range portTries {
			port := strconv.Itoa(lowestPort + rand.IntN(top-lowestPort))
			if !handedOut.ports[port] && canListen(port) {
				handedOut.ports[port] = true
				return port, nil
			}
		}
	}
	for range portTries {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("find a free port: %w", err)
		}
		_, port, _ := net.SplitHostPort(l.Addr().String())
		l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return "", fmt.Errorf("find a free port: %d ports drawn were all handed out already", portTries)
}

// FreePorts returns n ports as FreePort does, all different.
func FreePorts(n int) ([]string, error) {
	ports := make([]string, n)
	for i := range ports {
		var err error
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	return ports, nil
}

// canListen reports whether a loopback listener can bind port now.
func canListen(port string) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	var start int
	b, err := os.ReadFile(ephemeralRange)
	if err != nil {
		return defaultEphemeralStart
	}
	if _, err := fmt.Sscan(string(b), &start); err != nil {
		return defaultEphemeralStart
	}
	return start
}
