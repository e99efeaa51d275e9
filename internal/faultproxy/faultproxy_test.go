package faultproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
)

// recordingServer answers every line with "ok\n" and sends each line it received to got.
func recordingServer(t *testing.T) (addr string, got <-chan string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	lines := make(chan string, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					lines <- line
					if _, err := io.WriteString(c, "ok\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String(), lines
}

// roundTrip sends line through the proxy and returns the answer, or the error that ended the connection.
func roundTrip(t *testing.T, p *Proxy, line string) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, line); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func startProxy(t *testing.T, target string, f Faults) *Proxy {
	t.Helper()
	p, err := Start(target, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestForwardsWithoutFaults(t *testing.T) {
	addr, got := recordingServer(t)
	p := startProxy(t, addr, Faults{})
	answer, err := roundTrip(t, p, "hello\n")
	if err != nil || answer != "ok\n" {
		t.Fatalf("answer %q, %v; want ok", answer, err)
	}
	if line := <-got; line != "hello\n" {
		t.Fatalf("server got %q", line)
	}
	if c := p.Counts(); c.Connections != 1 || c.Resets != 0 || c.DroppedResponses != 0 {
		t.Fatalf("counts %+v", c)
	}
}

func TestResetNeverDeliversTheRequest(t *testing.T) {
	addr, got := recordingServer(t)
	p := startProxy(t, addr, Faults{ResetRate: 1})
	if answer, err := roundTrip(t, p, "lost\n"); err == nil {
		t.Fatalf("answer %q through a reset connection", answer)
	}
	p.SetFaults(Faults{})
	if _, err := roundTrip(t, p, "after\n"); err != nil {
		t.Fatal(err)
	}
	if line := <-got; line != "after\n" {
		t.Fatalf("server got %q first; the reset request must never arrive", line)
	}
	if c := p.Counts(); c.Resets != 1 {
		t.Fatalf("counts %+v, want 1 reset", c)
	}
}

func TestDroppedResponseDeliversTheRequestButNotTheAnswer(t *testing.T) {
	addr, got := recordingServer(t)
	p := startProxy(t, addr, Faults{DropResponseRate: 1})
	if answer, err := roundTrip(t, p, "applied\n"); err == nil {
		t.Fatalf("answer %q reached the client; it must be dropped", answer)
	}
	if line := <-got; line != "applied\n" {
		t.Fatalf("server got %q", line)
	}
	if c := p.Counts(); c.DroppedResponses != 1 {
		t.Fatalf("counts %+v, want 1 dropped response", c)
	}
}

func TestMatchLimitsFaultsToMatchingChunks(t *testing.T) {
	addr, _ := recordingServer(t)
	p := startProxy(t, addr, Faults{ResetRate: 1, Match: []byte("/shards/")})
	if answer, err := roundTrip(t, p, "counters/a\n"); err != nil || answer != "ok\n" {
		t.Fatalf("a chunk without the match: answer %q, %v; want ok", answer, err)
	}
	if _, err := roundTrip(t, p, "counters/a/shards/3\n"); err == nil {
		t.Fatal("a matching chunk went through; want a reset")
	}
}
