package localstack_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/testenv"
)

// cloudRunStopGrace is what Cloud Run gives an instance between SIGTERM and SIGKILL.
const cloudRunStopGrace = 10 * time.Second

// TestServeFunctionsStopsGracefullyOnSIGTERM runs the local stack's functions process on the
// emulator with a group commit interval of 30 s, so that increments arriving after a counter's first
// write wait in its group far longer than Cloud Run's 10 s of grace. Concurrent increments are sent,
// then SIGTERM, as Cloud Run stops an instance it no longer routes to. Every increment must be
// answered: 200 (counted once) or 503 (refused by the stopping process, not applied); the exact
// count in the emulator equals what was acknowledged; the process exits 0 before Cloud Run's SIGKILL.
func TestServeFunctionsStopsGracefullyOnSIGTERM(t *testing.T) {
	testenv.FirestoreEmulatorHost(t)
	bin := testenv.BuildLocalstack(t)
	port, project := freePort(t), testenv.NewProjectID()
	base := "http://127.0.0.1:" + port
	cmd := exec.Command(bin, localstack.ServeFunctionsCommand)
	cmd.Env = append(os.Environ(), "PORT="+port, "LOCAL_ONLY=true", "GOOGLE_CLOUD_PROJECT="+project, "GROUP_COMMIT_INTERVAL=30s")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	increment := func(ctx context.Context, id string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/Increment", strings.NewReader(`{"counter":"`+id+`"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	counters := []string{"a", "b", "c"}
	// The first increment of each counter is written at once; it also waits for the process to serve.
	for _, id := range counters {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if status, err := increment(context.Background(), id); err == nil {
				if status != http.StatusOK {
					t.Fatalf("first increment of %s: %d\n%s", id, status, logs.String())
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the functions process did not serve within a minute\n%s", logs.String())
			}
		}
	}

	// The rest wait in their counter's group for up to 30 s.
	const perCounter = 40
	type outcome struct {
		status int
		err    error
	}
	outcomes := make(map[string][]outcome)
	var mu sync.Mutex
	var sent, wg sync.WaitGroup
	for _, id := range counters {
		for range perCounter {
			sent.Add(1)
			wg.Go(func() {
				ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { sent.Done() }})
				status, err := increment(ctx, id)
				mu.Lock()
				outcomes[id] = append(outcomes[id], outcome{status, err})
				mu.Unlock()
			})
		}
	}
	sent.Wait()
	time.Sleep(300 * time.Millisecond) // let the process read them; any it had not yet taken are refused with 503

	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var exitErr error
	select {
	case exitErr = <-exited:
	case <-time.After(cloudRunStopGrace):
		t.Fatalf("the functions process still runs %s after SIGTERM: Cloud Run would kill it now\n%s", cloudRunStopGrace, logs.String())
	}
	stopped := time.Since(signalled)
	wg.Wait()
	if exitErr != nil {
		t.Errorf("the functions process exited with %v after SIGTERM, want 0\n%s", exitErr, logs.String())
	}

	db, err := firestore.NewClient(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store := counter.NewStore(db, config.Default().Schema(), counter.Options{DefaultNumShards: 10})
	waited, refused := 0, 0
	for _, id := range counters {
		acknowledged := int64(1) // the first increment
		for _, o := range outcomes[id] {
			switch {
			case o.err != nil:
				t.Errorf("increment of %s sent before SIGTERM got no answer: %v", id, o.err)
			case o.status == http.StatusOK:
				acknowledged++
				waited++
			case o.status == http.StatusServiceUnavailable:
				refused++
			default:
				t.Errorf("increment of %s answered %d, want 200 or 503", id, o.status)
			}
		}
		exact, err := store.Reader.Sum(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if exact != acknowledged {
			t.Errorf("counter %s: exact count %d, but %d increments were acknowledged", id, exact, acknowledged)
		}
	}
	if waited == 0 {
		t.Errorf("no increment waiting in a group was acknowledged (%d refused): the test did not test draining", refused)
	}
	if !strings.Contains(logs.String(), "every accepted request answered") {
		t.Errorf("the functions process did not log a complete graceful stop:\n%s", logs.String())
	}
	t.Logf("%d increments waiting in groups of a 30 s interval at SIGTERM: %d acknowledged (written at once), %d refused with 503; exited (%v) %s after SIGTERM",
		len(counters)*perCounter, waited, refused, exitErr, stopped.Round(time.Millisecond))
}
