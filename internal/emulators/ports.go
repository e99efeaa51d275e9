package emulators

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
)

// Ports are drawn from [lowestPort, ephemeral start): a port chosen free is bound later, and
// outgoing connections may take an ephemeral one meanwhile.
const (
	lowestPort            = 20000
	ephemeralRange        = "/proc/sys/net/ipv4/ip_local_port_range"
	defaultEphemeralStart = 32768 // Linux's, if ephemeralRange cannot be read
	portTries             = 100
)

// handedOut holds every port FreePort returned in this process, so none is returned twice.
var handedOut = struct {
	sync.Mutex
	ports map[string]bool
}{ports: make(map[string]bool)}

// FreePort returns a loopback port that was free a moment ago, never returned before in this
// process, below the ephemeral range when it can.
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

// FreePorts returns n ports as FreePort does.
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
