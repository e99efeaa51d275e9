package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/localstack"
)

// stack is a running bin/localstack process with its ports and commit log.
type stack struct {
	cmd          *exec.Cmd
	functionsURL string
	firestore    string
	pubsub       string
	project      string
	commitLog    string
	// eventsStats is the event bridge's stats URL, "" when the stack does not say it.
	eventsStats string
	exited      chan error
	stopOnce    sync.Once
	// logBytes counts the bytes of the functions' log lines the stack has printed.
	logBytes atomic.Int64
}

// functionsLogBytes is what line costs in Cloud Logging's terms, roughly: its bytes and newline if
// it is one of the functions' log lines (a JSON object with a severity), else 0.
func functionsLogBytes(line string) int64 {
	if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"severity":`) {
		return 0
	}
	return int64(len(line)) + 1
}

// stackConfig says how to run the local stack.
type stackConfig struct {
	binary, project, logDir string
	// instances is how many functions processes serve the functions behind the stack's balancer.
	instances int
	// functionsFirestore, when set, returns the Firestore address the functions use, given the
	// emulator's (e.g. a fault proxy in front of it).
	functionsFirestore func(emulator string) (string, error)
	// env is extra environment of the functions, e.g. the mode's settings.
	env []string
}

// startStack runs the local stack on free ports and waits for its ready line.
func startStack(c stackConfig) (*stack, error) {
	ports, err := emulators.FreePorts(4)
	if err != nil {
		return nil, err
	}
	s := &stack{
		functionsURL: "http://127.0.0.1:" + ports[0],
		firestore:    "127.0.0.1:" + ports[1],
		pubsub:       "127.0.0.1:" + ports[2],
		project:      c.project,
		commitLog:    filepath.Join(c.logDir, "commits.jsonl"),
		exited:       make(chan error, 1),
	}
	env := append(append(os.Environ(), emulators.NoHostEnvs()...), "PORT="+ports[0], "FIRESTORE_PORT="+ports[1], "PUBSUB_PORT="+ports[2],
		"APP_PORT="+ports[3], "LOCALSTACK_AUTH=false",
		"GOOGLE_CLOUD_PROJECT="+c.project, "LOCALSTACK_LOGS="+c.logDir, commitlog.EnvPath+"="+s.commitLog,
		"LOCALSTACK_INSTANCES="+strconv.Itoa(max(1, c.instances)))
	env = append(env, localstack.OSPickedPorts...)
	if c.functionsFirestore != nil {
		addr, err := c.functionsFirestore(s.firestore)
		if err != nil {
			return nil, err
		}
		env = append(env, "LOCALSTACK_FUNCTIONS_FIRESTORE="+addr)
	}
	s.cmd = exec.Command(c.binary)
	s.cmd.Env = append(env, c.env...)
	logs, err := os.Create(filepath.Join(c.logDir, "stack.log"))
	if err != nil {
		return nil, err
	}
	s.cmd.Stderr = logs
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (run `make build` first): %w", c.binary, err)
	}
	ready, scanned := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(scanned)
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for scanner.Scan() {
			fmt.Fprintln(logs, scanner.Text())
			s.logBytes.Add(functionsLogBytes(scanner.Text()))
			if !signalled && strings.HasPrefix(scanner.Text(), "ready") {
				for _, field := range strings.Fields(scanner.Text()) {
					if url, ok := strings.CutPrefix(field, "events="); ok {
						s.eventsStats = url
					}
				}
				close(ready)
				signalled = true
			}
		}
	}()
	go func() {
		<-scanned // Wait closes stdout: read it to the end first
		s.exited <- s.cmd.Wait()
	}()
	select {
	case <-ready:
		return s, nil
	case err := <-s.exited:
		return nil, fmt.Errorf("the local stack exited before it was ready (%v); see %s", err, logs.Name())
	case <-time.After(3 * time.Minute):
		s.stop()
		return nil, fmt.Errorf("the local stack was not ready within 3 minutes; see %s", logs.Name())
	}
}

// stop ends the stack as Ctrl-C would, and waits for it; once.
func (s *stack) stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(time.Minute):
			_ = s.cmd.Process.Kill()
		}
	})
}

// killFunctions sends SIGKILL to one of the stack's functions processes, as a crash would; the
// stack's supervisor starts it again.
func (s *stack) killFunctions() error {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		b, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state, ppid, ...
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(s.cmd.Process.Pid) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(stat), "cmdline"))
		if bytes.Contains(cmdline, []byte("serve-functions")) {
			return syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return fmt.Errorf("no functions process under the local stack (pid %d)", s.cmd.Process.Pid)
}

// instanceRequests is how many requests each functions instance served, from the stack's balancer;
// nil with one instance (no balancer).
func (s *stack) instanceRequests() ([]int64, error) {
	resp, err := httpClient.Get(s.functionsURL + localstack.InstancesPath)
	if err != nil {
		return nil, fmt.Errorf("instance stats: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil
	}
	var stats []localstack.InstanceStats
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		return nil, fmt.Errorf("instance stats: %w", err)
	}
	served := make([]int64, len(stats))
	for i, st := range stats {
		served[i] = st.Served
	}
	return served, nil
}

// eventStats reads the event bridge's counts; ok is false when the stack does not report them.
func (s *stack) eventStats() (st localstack.BridgeStats, ok bool) {
	if s.eventsStats == "" {
		return st, false
	}
	resp, err := httpClient.Get(s.eventsStats)
	if err != nil {
		return st, false
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st) == nil
}
