package functions_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/localstack"
)

// TestFunctionsProcessAnswersLoneDeliveryAfterCancelledBurst is the wedge test against the local
// stack's functions process, registered as deployed: bursts of Pub/Sub push deliveries to
// IncrementFromPubSub that their sender abandons as soon as they are sent, or cancels soon after,
// then one lone delivery. It must be answered at once (200) and counted once. Served through the
// Functions Framework's CloudEvent receiver, the lone delivery waits until another request arrives.
func TestFunctionsProcessAnswersLoneDeliveryAfterCancelledBurst(t *testing.T) {
	s := newStackPubSub(t)
	burst, lone := s.prefix+"-burst", s.prefix+"-lone"
	endpoint := pushEndpoint(s.env.FunctionsURL, localstack.TopicName(s.env.Project, "t-"+s.prefix))
	host := mustHost(t, endpoint)
	// The burst's counter exists first, so its increments do not race to create it.
	resp, err := http.Post(s.env.FunctionsURL+"/ConfigureCounter", "application/json", bytes.NewReader([]byte(`{"counter":"`+burst+`","num_shards":10}`)))
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("configure %s: %v %v", burst, resp, err)
	}
	resp.Body.Close()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	defer client.CloseIdleConnections()
	const bursts, perBurst = 10, 50
	for b := range bursts {
		var wg sync.WaitGroup
		for i := range perBurst {
			wg.Go(func() {
				req := pushDelivery(t, context.Background(), endpoint, fmt.Sprintf("%s-%d-%d", s.prefix, b, i), burst)
				if i%3 != 0 {
					abandonOn(host, req)
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%10)*5*time.Millisecond)
				defer cancel()
				if resp, err := client.Do(req.WithContext(ctx)); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
	}

	// The lone delivery comes after a quiet spell, as the next event of a quiet counter does: by then
	// the process has finished with the burst.
	time.Sleep(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	resp, err = client.Do(pushDelivery(t, ctx, endpoint, s.prefix+"-lone", lone))
	if err != nil {
		t.Fatalf("after %d push deliveries abandoned or cancelled by their sender, a lone delivery got no answer: %v (wedged)", bursts*perBurst, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("lone delivery answered %d, want 200", resp.StatusCode)
	}
	if got := s.count(t, lone); got != 1 {
		t.Errorf("%s = %d after its one delivery was acknowledged, want 1", lone, got)
	}
	t.Logf("%d deliveries abandoned or cancelled; the lone delivery was answered %d in %s", bursts*perBurst, resp.StatusCode, time.Since(start).Round(time.Millisecond))
}

// pushDelivery is a Pub/Sub push of one increment of counter, with message ID id.
func pushDelivery(t *testing.T, ctx context.Context, endpoint, id, counter string) *http.Request {
	t.Helper()
	data := base64.StdEncoding.EncodeToString([]byte(`{"counter":"` + counter + `"}`))
	body := `{"message":{"data":"` + data + `","messageId":"` + id + `"},"subscription":"projects/p/subscriptions/wedge"}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// abandonOn sends req to host on a connection of its own and closes it without waiting for an answer.
func abandonOn(host string, req *http.Request) {
	conn, err := net.Dial("tcp", host)
	if err != nil {
		return
	}
	_ = req.Write(conn)
	conn.Close()
}

// mustHost is the host:port of rawURL.
func mustHost(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
