// Package faultproxy is a TCP proxy that injects the network faults a function meets between itself and
// Firestore in production: connections reset before a request arrives, responses lost after the request
// went through (the write may have been applied, the caller cannot know), and added delay. Tests and the
// load harness put it between the functions and the Firestore emulator (FIRESTORE_EMULATOR_HOST points at
// the proxy), so the real client library, with its real retries, meets the faults.
//
// The proxy works on TCP chunks, not on gRPC calls: a fault hits whatever HTTP/2 frames a chunk holds and
// ends every call on the connection, as a real network failure does. Faults.Match narrows the chunks
// eligible for a fault to those holding a byte string (gRPC bodies are not compressed, so a document path
// such as "/shards/" picks the calls that touch shards).
package faultproxy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Faults says which faults the proxy injects. The zero value forwards everything untouched.
type Faults struct {
	// ResetRate is the probability that an eligible client chunk is not forwarded and its connection is
	// reset instead: the request never reaches the server.
	ResetRate float64
	// DropResponseRate is the probability that an eligible client chunk is forwarded and the connection
	// is then closed as soon as the server answers, before the answer reaches the client: the request
	// went through, its response is lost.
	DropResponseRate float64
	// Delay is added before every chunk is forwarded, in both directions.
	Delay time.Duration
	// Match, when not empty, limits ResetRate and DropResponseRate to client chunks that contain it.
	Match []byte
}

// Counts are what the proxy did so far.
type Counts struct {
	// Connections is how many client connections it accepted.
	Connections int64
	// Resets is how many connections it reset before forwarding a request chunk.
	Resets int64
	// DroppedResponses is how many connections it closed after forwarding a request chunk, without
	// forwarding the server's answer.
	DroppedResponses int64
}

// dropWait bounds how long a connection that drops its next response waits for the server to answer
// before it is closed anyway.
const dropWait = 2 * time.Second

// Proxy forwards TCP connections from its address to a target, injecting faults.
type Proxy struct {
	target   string
	listener net.Listener

	mu     sync.Mutex
	faults Faults
	conns  map[*link]struct{}
	closed bool

	connections, resets, drops atomic.Int64
	wg                         sync.WaitGroup
}

// Start listens on a free loopback port and forwards every connection to target with faults.
func Start(target string, faults Faults) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy listen: %w", err)
	}
	p := &Proxy{target: target, listener: l, faults: faults, conns: make(map[*link]struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's host:port, for FIRESTORE_EMULATOR_HOST.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// SetFaults changes the faults injected from now on, for every connection.
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = f
}

// Counts reports what the proxy did so far.
func (p *Proxy) Counts() Counts {
	return Counts{Connections: p.connections.Load(), Resets: p.resets.Load(), DroppedResponses: p.drops.Load()}
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
		l := &link{client: client, server: server, answered: make(chan struct{}, 1)}
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
	dropping       atomic.Bool   // the next server bytes are not forwarded; the link closes instead
	answered       chan struct{} // the server sent bytes while dropping
	closeOnce      sync.Once
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

// forwardRequests copies client chunks to the server, resetting or arming a dropped response as the
// faults say.
func (p *Proxy) forwardRequests(l *link) {
	defer p.forget(l)
	buf := make([]byte, 64<<10)
	for {
		n, err := l.client.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			f := p.currentFaults()
			time.Sleep(f.Delay)
			eligible := len(f.Match) == 0 || bytes.Contains(chunk, f.Match)
			roll := rand.Float64()
			switch {
			case eligible && roll < f.ResetRate:
				p.resets.Add(1)
				return
			case eligible && roll < f.ResetRate+f.DropResponseRate:
				// Counted before the request goes (forwardResponses closes the link as soon as the
				// server answers), so a client that sees its connection end also sees the count.
				p.drops.Add(1)
				l.dropping.Store(true)
				if _, err := l.server.Write(chunk); err != nil {
					return
				}
				select { // the server answered (or was given time to): the request went through
				case <-l.answered:
				case <-time.After(dropWait):
				}
				return
			}
			if _, err := l.server.Write(chunk); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forwardResponses copies server chunks to the client, unless the link is dropping its response.
func (p *Proxy) forwardResponses(l *link) {
	defer p.forget(l)
	buf := make([]byte, 64<<10)
	for {
		n, err := l.server.Read(buf)
		if n > 0 {
			if l.dropping.Load() {
				select {
				case l.answered <- struct{}{}:
				default:
				}
				return
			}
			time.Sleep(p.currentFaults().Delay)
			if _, werr := l.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
