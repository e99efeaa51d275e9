package localstack

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func startTestBalancer(t *testing.T, urls ...string) string {
	t.Helper()
	b, err := startBalancer(freeAddr(t), urls, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.stop)
	return "http://" + b.listener.Addr().String()
}

// TestBalancerSendsEachRequestToTheLeastBusyInstance holds one request open on whichever instance
// gets it: every request made meanwhile goes to the other, idle instance, with path and body unchanged.
func TestBalancerSendsEachRequestToTheLeastBusyInstance(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	got := make([][]string, 2)
	urls := make([]string, 2)
	for i := range urls {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			got[i] = append(got[i], r.URL.Path+" "+string(body))
			mu.Unlock()
			if r.URL.Path == "/hold" {
				<-release
			}
		}))
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	front := startTestBalancer(t, urls...)

	held := make(chan error, 1)
	go func() {
		resp, err := http.Post(front+"/hold", "text/plain", strings.NewReader("x"))
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	waitFor(t, 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(got[0])+len(got[1]) == 1 })
	busy := 0
	mu.Lock()
	if len(got[1]) == 1 {
		busy = 1
	}
	mu.Unlock()
	for i := range 5 {
		resp, err := http.Post(front+"/IncrementFromPubSub/projects/p/topics/t", "application/json", strings.NewReader(fmt.Sprintf(`{"n":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	idle := 1 - busy
	if len(got[busy]) != 1 || len(got[idle]) != 5 {
		t.Fatalf("busy instance got %q, idle one %q: want every request made meanwhile on the idle one", got[busy], got[idle])
	}
	if got[idle][0] != `/IncrementFromPubSub/projects/p/topics/t {"n":0}` {
		t.Errorf("forwarded request = %q, want path and body unchanged", got[idle][0])
	}
}

// TestBalancerAnswersTrulyWhenAnInstanceFails: an instance that cannot be reached gets 503 with
// Retry-After (not applied); one that dies after receiving the request gets 502 saying the outcome is
// unknown.
func TestBalancerAnswersTrulyWhenAnInstanceFails(t *testing.T) {
	t.Run("instance down: 503 with Retry-After", func(t *testing.T) {
		front := startTestBalancer(t, "http://"+freeAddr(t))
		resp, err := http.Post(front+"/Increment", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("answer %s, Retry-After %q: want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
		}
	})
	t.Run("instance dies mid-request: 502 unknown outcome", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // the request arrived; the answer never leaves
			}
		}))
		defer srv.Close()
		front := startTestBalancer(t, srv.URL)
		resp, err := http.Post(front+"/Increment", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != http.StatusBadGateway || body["outcome"] != "unknown" {
			t.Errorf("answer %s %v: want 502 with outcome unknown", resp.Status, body)
		}
	})
}

// waitFor polls cond for up to within.
func waitFor(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", within)
		}
	}
}
