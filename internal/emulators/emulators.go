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

// Emulator is a running emulator listening on HostPort: one Start launched, or, if Attached, one
// running already that Stop leaves running.
type Emulator struct {
	Kind     Kind
	HostPort string
	Attached bool
	cmd      *exec.Cmd
	exited   chan struct{}
}

// HostEnvs are the variables that point client libraries at running emulators (Firestore, Pub/Sub,
// Firebase Auth).
func HostEnvs() []string { return []string{Firestore().HostEnv, PubSub().HostEnv, Auth().HostEnv} }

// NoHostEnvs sets each of HostEnvs empty: appended to an environment, it makes a local stack started
// with it start emulators of its own rather than attach.
func NoHostEnvs() []string {
	var env []string
	for _, name := range HostEnvs() {
		env = append(env, name+"=")
	}
	return env
}

// Attach is the emulator of kind k running on hostPort (started by someone else, e.g. the Firebase
// CLI), once it answers HTTP within timeout. Its Stop does nothing.
func Attach(ctx context.Context, k Kind, hostPort string, timeout time.Duration) (*Emulator, error) {
	if _, _, err := net.SplitHostPort(hostPort); err != nil {
		return nil, fmt.Errorf("%s=%q: want HOST:PORT: %w", k.HostEnv, hostPort, err)
	}
	e := &Emulator{Kind: k, HostPort: hostPort, Attached: true}
	if err := e.waitReady(ctx, timeout); err != nil {
		return nil, fmt.Errorf("%s=%s: no running %s emulator answers there (start it, or unset %s to have one started): %w",
			k.HostEnv, hostPort, k.Name, k.HostEnv, err)
	}
	return e, nil
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

// FirestoreJar is the Cloud SDK's Firestore emulator jar (firebase-tools can run it); its error says
// what to install.
func FirestoreJar() (string, error) {
	launcher, err := Firestore().launcherPath()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(launcher), "cloud-firestore-emulator.jar"), nil
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
	if err := CheckPortFree(hostPort); err != nil {
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

// CheckPortFree fails if something listens on hostPort, such as a leftover emulator.
func CheckPortFree(hostPort string) error {
	l, err := net.Listen("tcp", hostPort)
	if err != nil {
		return fmt.Errorf("%s is in use (another emulator or server?): %w", hostPort, err)
	}
	return l.Close()
}

// waitReady polls the emulator's HTTP root until it answers 200 (or, for one Attached, any status).
func (e *Emulator) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.HostPort+"/", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || e.Attached {
				return nil
			}
		}
		select {
		case <-e.exited: // nil, so never ready, when Attached
			return fmt.Errorf("%s emulator exited before it was ready: %v", e.Kind.Name, e.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("%s emulator not ready on %s after %s: %w", e.Kind.Name, e.HostPort, timeout, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends the emulator's process group and waits for it; an Attached one is left running.
func (e *Emulator) Stop() {
	if e.Attached {
		return
	}
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
