// Package emulators starts and stops the Firestore, Pub/Sub and Auth emulators, each in its own
// process group so that stopping leaves no Java child behind.
package emulators

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Kind is one emulator: its human Name, the HostEnv variable pointing clients at it, and how to
// launch it.
type Kind struct {
	Name          string
	HostEnv       string
	launcher      string // below the Cloud SDK root
	debianPackage string
	args          func(host, port string) []string
	extraArgs     []string
}

// WithArgs is k launched with args after its own (e.g. the Firestore emulator's
// --webchannel_port and --websocket_port, which it otherwise picks at random).
func (k Kind) WithArgs(args ...string) Kind {
	k.extraArgs = append(append([]string(nil), k.extraArgs...), args...)
	return k
}

// Firestore is the Firestore emulator (native mode).
func Firestore() Kind {
	return Kind{
		Name:          "Firestore",
		HostEnv:       "FIRESTORE_EMULATOR_HOST",
		launcher:      "platform/cloud-firestore-emulator/cloud_firestore_emulator",
		debianPackage: "google-cloud-cli-firestore-emulator",
		args: func(host, port string) []string {
			return []string{"start", "--host=" + host, "--port=" + port}
		},
	}
}

// FirestoreImporting is the Firestore emulator starting with the data of an export (the path of
// its .overall_export_metadata file).
func FirestoreImporting(metadata string) Kind {
	k := Firestore()
	k.args = func(host, port string) []string {
		return []string{"start", "--host=" + host, "--port=" + port, "--import-data=" + metadata}
	}
	return k
}

// PubSub is the Pub/Sub emulator.
func PubSub() Kind {
	return Kind{
		Name:          "Pub/Sub",
		HostEnv:       "PUBSUB_EMULATOR_HOST",
		launcher:      "platform/pubsub-emulator/bin/cloud-pubsub-emulator",
		debianPackage: "google-cloud-cli-pubsub-emulator",
		args: func(host, port string) []string {
			return []string{"--host=" + host, "--port=" + port}
		},
	}
}

// Emulator is a running emulator listening on HostPort.
type Emulator struct {
	Kind     Kind
	HostPort string
	cmd      *exec.Cmd
	exited   chan struct{}
}

// launcherPath finds k's launch script beside the gcloud on PATH; its error says what to install.
func (k Kind) launcherPath() (string, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return "", fmt.Errorf("the %s emulator needs Java 17 or later on PATH: install it, e.g. apt-get install openjdk-17-jre-headless", k.Name)
	}
	gcloud, err := exec.LookPath("gcloud")
	if err != nil {
		return "", fmt.Errorf("the %s emulator comes with the Google Cloud CLI: install google-cloud-cli and %s", k.Name, k.debianPackage)
	}
	if resolved, err := filepath.EvalSymlinks(gcloud); err == nil {
		gcloud = resolved
	}
	path := filepath.Join(filepath.Dir(filepath.Dir(gcloud)), k.launcher)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the %s emulator is not installed (no %s): install the Debian package %s, or run gcloud components install %s",
			k.Name, path, k.debianPackage, filepath.Base(filepath.Dir(k.launcher)))
	}
	return path, nil
}

// Start launches k on hostPort, its output to logs, and returns once it answers HTTP; it fails if
// hostPort is taken or after timeout.
func Start(ctx context.Context, k Kind, hostPort string, logs io.Writer, timeout time.Duration) (*Emulator, error) {
	launcher, err := k.launcherPath()
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil, fmt.Errorf("%s emulator address %q: %w", k.Name, hostPort, err)
	}
	if err := checkPortFree(hostPort); err != nil {
		return nil, fmt.Errorf("%s emulator: %w", k.Name, err)
	}
	return launch(ctx, k, exec.Command(launcher, append(k.args(host, port), k.extraArgs...)...), hostPort, logs, timeout, func() {})
}

// launch starts cmd as Start describes; cleanup runs once the process has exited or failed to start.
func launch(ctx context.Context, k Kind, cmd *exec.Cmd, hostPort string, logs io.Writer, timeout time.Duration, cleanup func()) (*Emulator, error) {
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		cleanup()
		return nil, fmt.Errorf("start %s emulator: %w", k.Name, err)
	}
	e := &Emulator{Kind: k, HostPort: hostPort, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); cleanup(); close(e.exited) }()
	if err := e.waitReady(ctx, timeout); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

// checkPortFree fails if something listens on hostPort, such as a leftover emulator.
func checkPortFree(hostPort string) error {
	l, err := net.Listen("tcp", hostPort)
	if err != nil {
		return fmt.Errorf("%s is in use (another emulator or server?): %w", hostPort, err)
	}
	return l.Close()
}

// waitReady polls the emulator's HTTP root until it answers 200.
func (e *Emulator) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.HostPort+"/", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-e.exited:
			return fmt.Errorf("%s emulator exited before it was ready: %v", e.Kind.Name, e.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("%s emulator not ready on %s after %s: %w", e.Kind.Name, e.HostPort, timeout, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends the emulator's process group and waits for it.
func (e *Emulator) Stop() {
	StopGroup(e.cmd.Process.Pid, 5*time.Second)
	<-e.exited
}

// StopGroup sends SIGTERM to pid's process group, then SIGKILL after grace.
func StopGroup(pid int, grace time.Duration) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := syscall.Kill(-pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		fmt.Fprintf(os.Stderr, "kill process group %d: %v\n", pid, err)
	}
}
