package emulators

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortAvoidsTheEphemeralRange: the ports handed to the stack's servers are ones outgoing
// connections cannot take before the server binds them, they can be bound, and none is handed out
// twice (500 independent draws from the ~12,800 ports below the range would repeat one in all but
// about 1 run in 18,000).
func TestFreePortAvoidsTheEphemeralRange(t *testing.T) {
	start := ephemeralStart()
	if start <= lowestPort {
		t.Fatalf("ephemeral range starts at %d, at or below %d: this machine leaves no room for the stack's ports", start, lowestPort)
	}
	seen := make(map[string]bool)
	for range 500 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %s handed out twice", p)
		}
		seen[p] = true
		port, _ := strconv.Atoi(p)
		addr := net.JoinHostPort("127.0.0.1", p)
		if port < lowestPort || port >= start {
			t.Fatalf("port %d is outside [%d, %d)", port, lowestPort, start)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("the port handed out cannot be bound: %v", err)
		}
		l.Close()
	}
}
