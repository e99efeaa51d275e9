// Package faultproxy is a TCP proxy injecting network faults: resets, lost answers to requests that
// went through, delay. A fault ends every call on its connection. See docs/performance.md, "The
// load harness".
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

// Faults says what to inject (zero: nothing). Rates are shares of eligible request chunks, summing
// to at most 1.
type Faults struct {
	// ResetRate resets the connection instead of forwarding.
	ResetRate float64
	// DropResponseRate forwards, closing once the server answers.
	DropResponseRate float64
	// Delay is added to every chunk, both ways.
	Delay time.Duration
	// Match, if set, limits eligible requests to those whose DATA contains it.
	Match []byte
}

// Counts are what the proxy did. Eligible counts chunks a fault could have picked.
type Counts struct {
	Connections      int64
	Eligible         int64
	Resets           int64
	DroppedResponses int64
}

// dropWait bounds the wait for an answer to drop.
const dropWait = 2 * time.Second

// Proxy forwards TCP connections to a target, injecting faults.
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

// Start listens on a loopback port, forwarding to target.
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

// SetFaults replaces the faults and restarts their spread.
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults, p.schedule = f, newSchedule(f)
}

// Counts reports the counts so far.
func (p *Proxy) Counts() Counts {
	return Counts{Connections: p.connections.Load(), Eligible: p.eligible.Load(), Resets: p.resets.Load(), DroppedResponses: p.drops.Load()}
}

// Close stops accepting, closes every connection and waits.
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

// nextFault is the next eligible chunk's fault.
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
	// dropStreams, once set: forward nothing; close when one is answered.
	dropStreams atomic.Pointer[[]uint32]
	closeOnce   sync.Once
}

func (l *link) close() {
	l.closeOnce.Do(func() {
		if tc, ok := l.client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST
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

// forwardRequests copies client chunks to the server, injecting faults.
func (p *Proxy) forwardRequests(l *link) {
	defer p.forget(l)
	frames := newClientScanner()
	eachChunk(l.client, func(chunk []byte) bool {
		f := p.currentFaults()
		time.Sleep(f.Delay)
		streams := eligibleRequests(frames, chunk, f.Match)
		if len(streams) > 0 && l.dropStreams.Load() == nil {
			switch p.nextFault() {
			case resetFault:
				p.resets.Add(1)
				return false
			case dropFault:
				p.drops.Add(1) // before the client sees the close
				l.dropStreams.Store(&streams)
				time.AfterFunc(dropWait, l.close) // a server that never answers
			}
		}
		_, err := l.server.Write(chunk)
		return err == nil
	})
}

// eligibleRequests returns chunk's streams a fault may pick.
func eligibleRequests(frames *frameScanner, chunk, match []byte) []uint32 {
	var streams []uint32
	frames.feed(chunk, func(f frame) {
		if f.stream == 0 {
			return // connection-level frames
		}
		if len(match) == 0 && f.endsStream() || len(match) > 0 && f.typ == frameData && bytes.Contains(f.payload, match) {
			streams = append(streams, f.stream)
		}
	})
	return streams
}

// forwardResponses copies server chunks to the client until the link drops.
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

// eachChunk calls handle with each chunk read from conn until either ends.
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
