// Package faultproxy is a TCP proxy that injects the network faults a function meets between itself and
// Firestore in production: connections reset before a request arrives, responses lost after the request
// went through (the write may have been applied, the caller cannot know), and added delay. Tests and the
// load harness put it between the functions and the Firestore emulator (FIRESTORE_EMULATOR_HOST points at
// the proxy), so the real client library, with its real retries, meets the faults.
//
// The proxy speaks just enough HTTP/2 (the gRPC transport) to aim its faults: it follows frame boundaries
// and stream IDs, never header contents. A fault picks a request (a stream), and it ends every call on
// the connection, as a real network failure does. A dropped response is cut only once the server has
// finished answering the picked request, so the request certainly went through; cutting at the first
// bytes the server sends would race its flow-control and ping frames, and the request might not apply.
// Faults.Match narrows the requests eligible for a fault to those whose body holds a byte string (gRPC
// bodies are not compressed, so a document path such as "/shards/" picks the calls that touch shards).
//
// Faults are spread over the eligible chunks rather than drawn for each: from SetFaults on, the k-th
// fault falls on a random one of eligible chunks k/R to (k+1)/R (R the two rates together), resets and
// dropped responses taking turns the same way in proportion to their rates. So n eligible chunks meet
// ⌊n·R⌋ to ⌈n·R⌉ faults, never none by chance.
package faultproxy

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Faults says which faults the proxy injects. The zero value forwards everything untouched.
type Faults struct {
	// ResetRate is the share of client chunks carrying an eligible request that are not forwarded, their
	// connection reset instead: the request never reaches the server whole.
	ResetRate float64
	// DropResponseRate is the share of client chunks carrying an eligible request that are forwarded,
	// their connection then closed as soon as the server has answered that request, before the answer
	// reaches the client: the request went through, its response is lost. The two rates together count
	// as at most 1, resets first.
	DropResponseRate float64
	// Delay is added before every chunk is forwarded, in both directions.
	Delay time.Duration
	// Match, when not empty, makes a request eligible for ResetRate and DropResponseRate when a DATA
	// frame of its body contains Match; when empty, every request is eligible as its last frame passes.
	Match []byte
}

// Counts are what the proxy did so far.
type Counts struct {
	// Connections is how many client connections it accepted.
	Connections int64
	// Eligible is how many client chunks carrying an eligible request a fault could pick: while a rate
	// was set, on connections not already losing an answer.
	Eligible int64
	// Resets is how many connections it reset before forwarding a request chunk.
	Resets int64
	// DroppedResponses is how many connections it closed after the server answered a request, without
	// forwarding the answer.
	DroppedResponses int64
}

// dropWait bounds how long a connection that drops a response waits for the server to finish answering
// before it is closed anyway.
const dropWait = 2 * time.Second

// Proxy forwards TCP connections from its address to a target, injecting faults.
type Proxy struct {
	target   string
	listener net.Listener

	mu       sync.Mutex
	faults   Faults
	schedule schedule
	conns    map[*link]struct{}
	closed   bool

	connections, eligible, resets, drops atomic.Int64
	wg                                   sync.WaitGroup
}

// Start listens on a free loopback port and forwards every connection to target with faults.
func Start(target string, faults Faults) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy listen: %w", err)
	}
	p := &Proxy{target: target, listener: l, faults: faults, schedule: newSchedule(faults), conns: make(map[*link]struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's host:port, for FIRESTORE_EMULATOR_HOST.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// SetFaults changes the faults injected from now on, for every connection, and starts their spread
// afresh.
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults, p.schedule = f, newSchedule(f)
}

// Counts reports what the proxy did so far.
func (p *Proxy) Counts() Counts {
	return Counts{Connections: p.connections.Load(), Eligible: p.eligible.Load(), Resets: p.resets.Load(), DroppedResponses: p.drops.Load()}
}

// Close stops accepting, closes every connection and waits for the proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for l := range p.conns {
		l.close()
	}
	p.mu.Unlock()
	err := p.listener.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) currentFaults() Faults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults
}

// nextFault is the fault the next eligible chunk meets, if any.
func (p *Proxy) nextFault() fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.schedule.faults.share > 0 {
		p.eligible.Add(1)
	}
	return p.schedule.next()
}

func (p *Proxy) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		l := &link{client: client, server: server}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.close()
			return
		}
		p.conns[l] = struct{}{}
		p.mu.Unlock()
		p.connections.Add(1)
		p.wg.Go(func() { p.forwardRequests(l) })
		p.wg.Go(func() { p.forwardResponses(l) })
	}
}

// link is one proxied connection.
type link struct {
	client, server net.Conn
	// dropStreams, once set, names the requests whose answer the link waits for: from then on nothing
	// the server sends is forwarded, and the link closes when one of them is answered.
	dropStreams atomic.Pointer[[]uint32]
	closeOnce   sync.Once
}

func (l *link) close() {
	l.closeOnce.Do(func() {
		// An abortive close (RST), as a failed network path looks to the client.
		if tc, ok := l.client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		l.client.Close()
		l.server.Close()
	})
}

func (p *Proxy) forget(l *link) {
	l.close()
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
}

// forwardRequests copies client chunks to the server, resetting the connection or arming a dropped
// response when a chunk carries an eligible request and the faults say so.
func (p *Proxy) forwardRequests(l *link) {
	defer p.forget(l)
	frames := newClientScanner()
	eachChunk(l.client, func(chunk []byte) bool {
		f := p.currentFaults()
		time.Sleep(f.Delay)
		streams := eligibleRequests(frames, chunk, f.Match)
		// A link already losing an answer carries the rest of the request unharmed.
		if len(streams) > 0 && l.dropStreams.Load() == nil {
			switch p.nextFault() {
			case resetFault:
				p.resets.Add(1)
				return false
			case dropFault:
				// Counted before the request goes on (the link closes as soon as the server answers),
				// so a client that sees its connection end also sees the count.
				p.drops.Add(1)
				l.dropStreams.Store(&streams)
				time.AfterFunc(dropWait, l.close) // a server that never answers
			}
		}
		_, err := l.server.Write(chunk)
		return err == nil
	})
}

// eligibleRequests scans chunk and returns the streams of the requests in it that a fault may pick: those
// with a DATA frame containing match, or with match empty, those whose last frame is in the chunk.
func eligibleRequests(frames *frameScanner, chunk, match []byte) []uint32 {
	var streams []uint32
	frames.feed(chunk, func(f frame) {
		if f.stream == 0 {
			return // connection-level frames: settings, pings, flow control
		}
		if len(match) == 0 && f.endsStream() || len(match) > 0 && f.typ == frameData && bytes.Contains(f.payload, match) {
			streams = append(streams, f.stream)
		}
	})
	return streams
}

// forwardResponses copies server chunks to the client until the link starts losing an answer; from
// then on it forwards nothing, and ends the link once the awaited request has been answered.
func (p *Proxy) forwardResponses(l *link) {
	defer p.forget(l)
	frames := newServerScanner()
	eachChunk(l.server, func(chunk []byte) bool {
		dropping := l.dropStreams.Load()
		if dropping == nil {
			frames.feed(chunk, func(frame) {})
			time.Sleep(p.currentFaults().Delay)
			_, err := l.client.Write(chunk)
			return err == nil
		}
		answered := false
		frames.feed(chunk, func(f frame) {
			answered = answered || f.endsStream() && slices.Contains(*dropping, f.stream)
		})
		return !answered
	})
}

// eachChunk calls handle with every chunk read from conn, until conn ends or handle returns false.
func eachChunk(conn net.Conn, handle func(chunk []byte) bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 && !handle(buf[:n]) {
			return
		}
		if err != nil {
			return
		}
	}
}
