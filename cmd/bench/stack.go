package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stack is a running bin/localstack process with its ports and commit log.
type stack struct {
	cmd          *exec.Cmd
	functionsURL string
	firestore    string
	project      string
	commitLog    string
	exited       chan error
}

// startStack runs the local stack on free ports with extra environment and waits for its ready line.
func startStack(binary, project, logDir string, extraEnv ...string) (*stack, error) {
	ports := make([]string, 4)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		_, ports[i], _ = net.SplitHostPort(l.Addr().String())
		l.Close()
	}
	s := &stack{
		functionsURL: "http://127.0.0.1:" + ports[0],
		firestore:    "127.0.0.1:" + ports[1],
		project:      project,
		commitLog:    filepath.Join(logDir, "commits.jsonl"),
		exited:       make(chan error, 1),
	}
	s.cmd = exec.Command(binary)
	s.cmd.Env = append(os.Environ(), "PORT="+ports[0], "FIRESTORE_PORT="+ports[1], "PUBSUB_PORT="+ports[2],
		"APP_PORT="+ports[3], "LOCALSTACK_AUTH=false",
		"GOOGLE_CLOUD_PROJECT="+project, "LOCALSTACK_LOGS="+logDir, "COMMIT_LOG="+s.commitLog)
	s.cmd.Env = append(s.cmd.Env, extraEnv...)
	logs, err := os.Create(filepath.Join(logDir, "stack.log"))
	if err != nil {
		return nil, err
	}
	s.cmd.Stderr = logs
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (run `make build` first): %w", binary, err)
	}
	ready := make(chan struct{})
	go func() {
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for scanner.Scan() {
			fmt.Fprintln(logs, scanner.Text())
			if !signalled && strings.HasPrefix(scanner.Text(), "ready") {
				close(ready)
				signalled = true
			}
		}
	}()
	go func() { s.exited <- s.cmd.Wait() }()
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

// stop ends the stack as Ctrl-C would, and waits for it.
func (s *stack) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
	}
}

// killFunctions sends SIGKILL to the stack's functions process, as a crash would; the stack's
// supervisor starts it again.
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
