package localstack_test

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/testenv"
)

// portSettings are the variables that place every port `make run` opens (docs/development.md).
var portSettings = []string{"PORT", "FIRESTORE_PORT", "FIRESTORE_WEBCHANNEL_PORT", "FIRESTORE_WEBSOCKET_PORT", "PUBSUB_PORT",
	"AUTH_PORT", "AUTH_HUB_PORT", "AUTH_LOGGING_PORT", "APP_PORT", "EVENTS_PORT", "INSTANCES_PORT"}

// TestTwoStacksOnTheirPorts starts two stacks at once, each with every port setting its own (two
// functions instances each, so INSTANCES_PORT is used): both answer, and every port a stack's
// processes listen on is one of its settings, and each setting's port is listened on, but for the
// one internal port each Java emulator opens where the OS says (no flag sets it; it cannot collide).
func TestTwoStacksOnTheirPorts(t *testing.T) {
	testenv.FirestoreEmulatorHost(t)
	bin := testenv.BuildLocalstack(t)
	type stack struct {
		cmd   *exec.Cmd
		ports map[string]string // setting -> port
		ready chan string
	}
	var stacks []*stack
	for i := range 2 {
		s := &stack{ports: map[string]string{}, ready: make(chan string, 1)}
		env := append(append(os.Environ(), emulators.NoHostEnvs()...), fmt.Sprintf("GOOGLE_CLOUD_PROJECT=demo-ports-%d", i), "LOCALSTACK_LOGS="+t.TempDir(), "LOCALSTACK_INSTANCES=2")
		for _, name := range portSettings {
			s.ports[name] = freePort(t)
			env = append(env, name+"="+s.ports[name])
		}
		// INSTANCES_PORT and the port after it: both must be free.
		s.ports["INSTANCES_PORT+1"] = strconv.Itoa(atoi(t, s.ports["INSTANCES_PORT"]) + 1)
		s.cmd = exec.Command(bin)
		s.cmd.Env = env
		stdout, err := s.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.cmd.Process.Signal(os.Interrupt); _ = s.cmd.Wait() })
		go func() {
			scanner := bufio.NewScanner(stdout)
			for scanner.Scan() {
				if line := scanner.Text(); strings.HasPrefix(line, "ready") {
					s.ready <- line
				}
			}
		}()
		stacks = append(stacks, s)
	}
	for i, s := range stacks {
		select {
		case <-s.ready:
		case <-time.After(3 * time.Minute):
			t.Fatalf("stack %d: no ready line within 3 minutes", i)
		}
	}
	for i, s := range stacks {
		resp, err := http.Get("http://127.0.0.1:" + s.ports["PORT"] + "/Count?counter=none")
		if err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("stack %d: Count of a missing counter: %v %v, want 404", i, resp, err)
		} else {
			resp.Body.Close()
		}
		resp, err = http.Get("http://127.0.0.1:" + s.ports["EVENTS_PORT"] + "/stats")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("stack %d: the event bridge's /stats on EVENTS_PORT: %v %v", i, resp, err)
		} else {
			resp.Body.Close()
		}
		settings := map[string]string{}
		for name, port := range s.ports {
			settings[port] = name
		}
		javaInternal := map[int]int{} // java pid -> ports of no setting
		seen := map[string]bool{}
		for _, l := range listeningPorts(t, s.cmd.Process.Pid) {
			if name := settings[l.port]; name != "" {
				seen[name] = true
				continue
			}
			if l.command == "java" && javaInternal[l.pid] == 0 {
				javaInternal[l.pid]++
				continue
			}
			t.Errorf("stack %d: %s (pid %d) listens on port %s, which no setting names", i, l.command, l.pid, l.port)
		}
		for name, port := range s.ports { // so the scan above saw the stack's sockets
			if !seen[name] {
				t.Errorf("stack %d: nothing of the stack listens on %s=%s", i, name, port)
			}
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// listener is a listening TCP socket of a process.
type listener struct {
	pid     int
	command string
	port    string
}

// listeningPorts lists the TCP ports that root and its descendants listen on (Linux /proc).
func listeningPorts(t *testing.T, root int) []listener {
	t.Helper()
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its last ')'.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	tree := []int{root}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	listening := map[string]string{} // socket inode -> port
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			port, _ := strconv.ParseUint(hexPort, 16, 16)
			listening[f[9]] = strconv.FormatUint(port, 10)
		}
	}
	var found []listener
	for _, pid := range tree {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		var ports []string
		for _, fd := range fds {
			target, err := os.Readlink(fd)
			if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
				if port := listening[strings.TrimSuffix(inode, "]")]; port != "" && !slices.Contains(ports, port) {
					ports = append(ports, port)
					found = append(found, listener{pid: pid, command: strings.TrimSpace(string(comm)), port: port})
				}
			}
		}
	}
	return found
}
