package faultproxy

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// h2Server is a plaintext HTTP/2 server, as the Firestore emulator is to its gRPC clients. Each request
// body is recorded once the handler has finished answering it.
type h2Server struct {
	addr string
	mu   sync.Mutex
	done []string
}

// answered returns the bodies of the requests the server has answered, in order.
func (s *h2Server) answered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.done...)
}

// startH2Server serves HTTP/2 without TLS. Its handler reads the whole request (one cut short by a
// reset is not applied, as a gRPC server applies no unary call without its end), sends the response
// headers at once, waits applyAfter, then records the request as applied and ends the response: the
// server's first bytes come long before the request has been applied, as a gRPC server's flow-control
// and ping frames do.
func startH2Server(t *testing.T, applyAfter time.Duration) *h2Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h2Server{addr: l.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // the request never arrived whole: like a gRPC server, apply nothing
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(applyAfter)
		s.mu.Lock()
		s.done = append(s.done, string(body))
		s.mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	})}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return s
}

// post sends body through the proxy over HTTP/2 without TLS, on a connection of its own, and returns the
// answer, or the error that ended the connection.
func post(t *testing.T, p *Proxy, body string) (string, error) {
	t.Helper()
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post("http://"+p.Addr()+"/", "application/grpc", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return string(answer), err
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
	s := startH2Server(t, 50*time.Millisecond)
	p := startProxy(t, s.addr, Faults{})
	answer, err := post(t, p, "hello")
	if err != nil || answer != "ok" {
		t.Fatalf("answer %q, %v; want ok", answer, err)
	}
	if got := s.answered(); len(got) != 1 || got[0] != "hello" {
		t.Fatalf("server answered %q, want [hello]", got)
	}
	if c := p.Counts(); c.Connections != 1 || c.Resets != 0 || c.DroppedResponses != 0 {
		t.Fatalf("counts %+v", c)
	}
}

func TestResetNeverDeliversTheRequest(t *testing.T) {
	s := startH2Server(t, 50*time.Millisecond)
	p := startProxy(t, s.addr, Faults{ResetRate: 1})
	if answer, err := post(t, p, "lost"); err == nil {
		t.Fatalf("answer %q through a reset connection", answer)
	}
	p.SetFaults(Faults{})
	if _, err := post(t, p, "after"); err != nil {
		t.Fatal(err)
	}
	if got := s.answered(); len(got) != 1 || got[0] != "after" {
		t.Fatalf("server answered %q; the reset request must never arrive", got)
	}
	if c := p.Counts(); c.Resets != 1 {
		t.Fatalf("counts %+v, want 1 reset", c)
	}
}

// TestDroppedResponseIsCutOnlyAfterTheServerAnswered is the guarantee the fault tests rest on: when the
// client's connection ends, the server has already applied the request, although it sent bytes (the
// response headers) long before.
func TestDroppedResponseIsCutOnlyAfterTheServerAnswered(t *testing.T) {
	s := startH2Server(t, 50*time.Millisecond)
	p := startProxy(t, s.addr, Faults{DropResponseRate: 1})
	answer, err := post(t, p, "applied")
	if err == nil {
		t.Fatalf("answer %q reached the client; it must be dropped", answer)
	}
	if got := s.answered(); len(got) != 1 || got[0] != "applied" {
		t.Fatalf("when the client's connection ended (%v) the server had answered %q; want [applied]", err, got)
	}
	if c := p.Counts(); c.DroppedResponses != 1 {
		t.Fatalf("counts %+v, want 1 dropped response", c)
	}
}

func TestMatchLimitsFaultsToMatchingRequests(t *testing.T) {
	s := startH2Server(t, 50*time.Millisecond)
	p := startProxy(t, s.addr, Faults{ResetRate: 1, Match: []byte("/shards/")})
	if answer, err := post(t, p, "counters/a"); err != nil || answer != "ok" {
		t.Fatalf("a request without the match: answer %q, %v; want ok", answer, err)
	}
	if _, err := post(t, p, "counters/a/shards/3"); err == nil {
		t.Fatal("a matching request went through; want a reset")
	}
}

// TestEveryRunOfEligibleRequestsHoldsItsShareOfFaults sends runs of 50 requests at 2% resets and 2%
// dropped responses, as the load harness's fault test does: each run must meet one of each. Drawn
// independently, a run of 50 would go without any fault in 13% of runs (0.96^50) and without one of
// the two kinds in 60%.
func TestEveryRunOfEligibleRequestsHoldsItsShareOfFaults(t *testing.T) {
	s := startH2Server(t, 0)
	p := startProxy(t, s.addr, Faults{})
	const runs, requests = 20, 50
	for run := range runs {
		before := p.Counts()
		p.SetFaults(Faults{ResetRate: 0.02, DropResponseRate: 0.02})
		for range requests {
			_, _ = post(t, p, "x") // a fault ends the request with an error
		}
		p.SetFaults(Faults{})
		c := p.Counts()
		if resets, drops := c.Resets-before.Resets, c.DroppedResponses-before.DroppedResponses; resets != 1 || drops != 1 {
			t.Fatalf("run %d of %d requests at reset=0.02,drop=0.02: %d resets and %d dropped responses; want 1 and 1", run+1, requests, resets, drops)
		}
		if eligible := c.Eligible - before.Eligible; eligible != requests {
			t.Fatalf("run %d: %d eligible chunks counted for %d requests", run+1, eligible, requests)
		}
	}
}

// TestSpreadPicksItsShareOfEveryFirstStretch holds spread to its contract: whatever the random
// places, the first n events hold ⌊n·share⌋ to ⌈n·share⌉ picks, for every n.
func TestSpreadPicksItsShareOfEveryFirstStretch(t *testing.T) {
	for _, share := range []float64{0, 0.02, 0.04, 0.1, 1.0 / 3, 0.5, 0.6, 0.99, 1} {
		t.Run(fmt.Sprint(share), func(t *testing.T) {
			for range 1000 {
				s, picks := newSpread(share), 0
				for n := 1; n <= 300; n++ {
					if s.pick() {
						picks++
					}
					exact := float64(n) * share
					if lo, hi := int(math.Floor(exact+1e-9)), int(math.Ceil(exact-1e-9)); picks < lo || picks > hi {
						t.Fatalf("%d picks in the first %d events at share %v; want %d to %d", picks, n, share, lo, hi)
					}
				}
			}
		})
	}
}

func TestFrameScannerFollowsFramesAcrossChunks(t *testing.T) {
	frameBytes := func(typ, flags byte, stream uint32, payload string) []byte {
		n := len(payload)
		b := []byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags, byte(stream >> 24), byte(stream >> 16), byte(stream >> 8), byte(stream)}
		return append(b, payload...)
	}
	var wire bytes.Buffer
	wire.WriteString(clientPreface)
	wire.Write(frameBytes(0x4, 0, 0, ""))                   // SETTINGS
	wire.Write(frameBytes(frameHeaders, 0x4, 1, "hdrs"))    // HEADERS, END_HEADERS
	wire.Write(frameBytes(frameData, 0, 1, "a/shards/1"))   // DATA
	wire.Write(frameBytes(frameData, flagEndStream, 1, "")) // empty DATA, END_STREAM
	wire.Write(frameBytes(frameRSTStream, 0, 3, "\x00\x00\x00\x08"))
	// Every way of cutting the bytes into chunks must give the same frames.
	for size := 1; size <= wire.Len(); size++ {
		s := newClientScanner()
		var got []frame
		for b := wire.Bytes(); len(b) > 0; {
			n := min(size, len(b))
			s.feed(b[:n], func(f frame) { got = append(got, f) })
			b = b[n:]
		}
		if len(got) != 5 {
			t.Fatalf("chunks of %d: %d frames, want 5", size, len(got))
		}
		if got[2].stream != 1 || string(got[2].payload) != "a/shards/1" || got[2].endsStream() {
			t.Fatalf("chunks of %d: DATA frame %+v", size, got[2])
		}
		if !got[3].endsStream() || !got[4].endsStream() || got[4].stream != 3 || got[0].endsStream() {
			t.Fatalf("chunks of %d: frames %+v", size, got)
		}
	}
}
