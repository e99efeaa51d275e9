package testenv

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/emulators"
)

// BuildLocalstack builds cmd/localstack into t's temporary directory and returns its path.
func BuildLocalstack(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "localstack")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/shardcount/counters/cmd/localstack").CombinedOutput()
	if err != nil {
		t.Fatalf("build localstack: %v\n%s", err, out)
	}
	return bin
}

// RunLocalstack runs bin as `make run` does, with env added to this process's environment after
// emulators.NoHostEnvs (so it attaches only to the emulators env names), and returns its ready line.
// stop sends SIGTERM and returns how the stack exited; one still running when t ends is killed.
func RunLocalstack(t testing.TB, bin string, env ...string) (ready string, stop func() error) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), emulators.NoHostEnvs()...), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 64<<10), 1<<20)
		for scanner.Scan() {
			if line := scanner.Text(); strings.HasPrefix(line, "ready") {
				lines <- line
			}
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("localstack exited before its ready line: %v", cmd.Wait())
		}
		ready = line
	case <-time.After(2 * time.Minute):
		t.Fatal("no ready line within 2 minutes")
	}
	return ready, func() error {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return err
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			return err
		case <-time.After(time.Minute):
			return errors.New("localstack still running a minute after SIGTERM")
		}
	}
}
