package localstack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"syscall"
	"time"

	"github.com/shardcount/counters/internal/emulators"
)

// restartDelay is the pause before a crashed functions process is started again.
const restartDelay = time.Second

// stopGrace is the time between SIGTERM and SIGKILL, as on Cloud Run.
const stopGrace = 10 * time.Second

// supervisor restarts the functions process whenever it dies, as the platform would.
type supervisor struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// superviseFunctions runs argv (in its own process group, with env, output to out)
// until ctx ends, restarting it whenever it exits.
func superviseFunctions(ctx context.Context, argv, env []string, out io.Writer) *supervisor {
	ctx, cancel := context.WithCancel(ctx)
	s := &supervisor{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				fmt.Fprintf(out, "localstack: start functions: %v\n", err)
			} else {
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				select {
				case <-ctx.Done():
					emulators.StopGroup(cmd.Process.Pid, stopGrace)
					<-exited
					return
				case err := <-exited:
					fmt.Fprintf(out, "localstack: functions process exited (%v); restarting\n", err)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(restartDelay):
			}
		}
	}()
	return s
}

// stop ends the functions process and waits until it is gone.
func (s *supervisor) stop() {
	s.cancel()
	<-s.done
}

// waitHTTP polls url until it answers with any HTTP status, or fails after timeout.
func waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer within %s: %w", url, timeout, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
