package localstack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// InstancesPath answers GET with every instance's InstanceStats; no CamelCase entry point clashes.
const InstancesPath = "/_localstack/instances"

// Balancer sends each request to the functions instance with the fewest in flight, as Cloud Run
// does. A request never sent gets 503 with Retry-After; one whose instance failed after, 502.
type Balancer struct {
	listener net.Listener
	server   *http.Server
	backends []*backend
	next     atomic.Uint64
}

// backend is one functions instance behind the balancer.
type backend struct {
	url              *url.URL
	proxy            *httputil.ReverseProxy
	inFlight, served atomic.Int64
}

// InstanceStats are one instance's base URL, requests finished so far and requests held now.
type InstanceStats struct {
	URL      string `json:"url"`
	Served   int64  `json:"served"`
	InFlight int64  `json:"in_flight"`
}

// startBalancer listens on addr and forwards to the instances at instanceURLs.
func startBalancer(addr string, instanceURLs []string, logs io.Writer) (*Balancer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("balancer: %w", err)
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second}
	errorLog := log.New(logs, "localstack balancer: ", 0)
	b := &Balancer{listener: l}
	for _, raw := range instanceURLs {
		u, err := url.Parse(raw)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("balancer: instance URL %q: %w", raw, err)
		}
		b.backends = append(b.backends, &backend{url: u, proxy: &httputil.ReverseProxy{
			Rewrite:      func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = r.In.Host },
			Transport:    transport,
			ErrorLog:     errorLog,
			ErrorHandler: answerProxyError,
		}})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+InstancesPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(b.Stats())
	})
	mux.HandleFunc("/", b.forward)
	b.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = b.server.Serve(l) }()
	return b, nil
}

// forward sends r to the least busy instance.
func (b *Balancer) forward(w http.ResponseWriter, r *http.Request) {
	be := b.pick()
	be.inFlight.Add(1)
	defer func() {
		be.inFlight.Add(-1)
		be.served.Add(1)
	}()
	be.proxy.ServeHTTP(w, r)
}

// pick returns the instance with the fewest requests in flight; ties go round robin.
func (b *Balancer) pick() *backend {
	start := int(b.next.Add(1))
	best := b.backends[start%len(b.backends)]
	for i := 1; i < len(b.backends); i++ {
		if be := b.backends[(start+i)%len(b.backends)]; be.inFlight.Load() < best.inFlight.Load() {
			best = be
		}
	}
	return best
}

// answerProxyError answers 503 with Retry-After if the instance was never reached, else 502.
func answerProxyError(w http.ResponseWriter, _ *http.Request, err error) {
	w.Header().Set("Content-Type", "application/json")
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "no instance could take the request (not applied); retry after 1 s"})
		return
	}
	w.WriteHeader(http.StatusBadGateway)
	_ = json.NewEncoder(w).Encode(map[string]string{"outcome": "unknown",
		"error": "the instance failed after it received the request: it may or may not have been applied; retry only with an Idempotency-Key"})
}

// Stats returns every instance's counts, in instance order.
func (b *Balancer) Stats() []InstanceStats {
	stats := make([]InstanceStats, len(b.backends))
	for i, be := range b.backends {
		stats[i] = InstanceStats{URL: be.url.String(), Served: be.served.Load(), InFlight: be.inFlight.Load()}
	}
	return stats
}

// stop closes the balancer's listener and connections.
func (b *Balancer) stop() { _ = b.server.Close() }
