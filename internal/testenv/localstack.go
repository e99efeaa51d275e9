package testenv

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// keptInfos is how many of the stack's last INFO logs a failed test shows.
const keptInfos = 200

// RunLocalstack runs bin as `make run` does, with env added to this process's environment after
// emulators.NoHostEnvs (so it attaches only to the emulators env names), and returns its ready line.
// stop sends SIGTERM and returns how the stack exited; one still running when t ends is killed. If t
// fails, its log shows the stack's lines other than INFO logs, and its last INFO logs.
func RunLocalstack(t testing.TB, bin string, env ...string) (ready string, stop func() error) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), emulators.NoHostEnvs()...), env...)
	var stderr LogBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		notes  []string // the stack's lines other than INFO logs
		infos  []string // its last keptInfos INFO logs
		lines  = make(chan string, 1)
		copied = make(chan struct{})
	)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select { // its functions processes, which share its output, stop within their 10 s of grace
		case <-copied:
		case <-time.After(15 * time.Second):
		}
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("the stack's output other than INFO logs:\n%s", strings.Join(notes, "\n"))
			t.Logf("the stack's last %d INFO logs:\n%s", len(infos), strings.Join(infos, "\n"))
			t.Logf("the stack's standard error:\n%s", stderr.String())
		}
	})
	go func() {
		defer close(copied)
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 64<<10), 1<<20)
		for scanner.Scan() {
			line := scanner.Text()
			if strings.HasPrefix(line, "ready") {
				lines <- line
			}
			mu.Lock()
			if !strings.Contains(line, `"severity":"INFO"`) {
				notes = append(notes, line)
			} else if infos = append(infos, line); len(infos) > keptInfos {
				infos = infos[1:]
			}
			mu.Unlock()
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
