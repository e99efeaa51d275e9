package emulators

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// AuthHostEnv points the Firebase SDKs, Go's Admin SDK included, at the Auth emulator.
const AuthHostEnv = "FIREBASE_AUTH_EMULATOR_HOST"

// Auth is the Firebase Auth emulator (firebase-tools); StartAuth launches it.
func Auth() Kind { return Kind{Name: "Firebase Auth", HostEnv: AuthHostEnv} }

// StartAuth starts the Auth emulator of webDir's firebase-tools for project on hostPort, as Start
// does, with firebase-tools' emulator hub on hubPort and its logging server on loggingPort ("" or
// "0": a free port each).
func StartAuth(ctx context.Context, webDir, project, hostPort, hubPort, loggingPort string, logs io.Writer, timeout time.Duration) (*Emulator, error) {
	kind := Auth()
	cli := filepath.Join(webDir, "node_modules", ".bin", "firebase")
	if _, err := os.Stat(cli); err != nil {
		return nil, fmt.Errorf("the Firebase Auth emulator comes with npm firebase-tools: run `npm ci --prefix %s` (make run and make test do): %w", webDir, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return nil, fmt.Errorf("the Firebase Auth emulator needs Node.js 20 or later on PATH: install it, e.g. apt-get install nodejs npm")
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil, fmt.Errorf("auth emulator address %q: %w", hostPort, err)
	}
	if err := CheckPortFree(hostPort); err != nil {
		return nil, fmt.Errorf("auth emulator: %w", err)
	}
	dir, err := os.MkdirTemp("", "auth-emulator-")
	if err != nil {
		return nil, fmt.Errorf("auth emulator config: %w", err)
	}
	config, err := authConfig(dir, host, port, hubPort, loggingPort)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(cli, "emulators:start", "--only", "auth", "--project", project, "--config", config)
	cmd.Dir = dir // for firebase-tools' debug log
	cmd.Env = append(os.Environ(), "NO_UPDATE_NOTIFIER=1")
	return launch(ctx, kind, cmd, hostPort, logs, timeout, func() { _ = os.RemoveAll(dir) })
}

// authConfig writes the emulator's firebase.json into dir and returns its path: the Auth emulator
// on port, the emulator hub and the logging server on hubPort and loggingPort ("" or "0": a free
// port each).
func authConfig(dir, host, port, hubPort, loggingPort string) (string, error) {
	authPort, _ := strconv.Atoi(port)
	cfg := map[string]any{"emulators": map[string]any{
		"auth": map[string]any{"host": host, "port": authPort},
		"ui":   map[string]any{"enabled": false},
	}}
	for name, p := range map[string]string{"hub": hubPort, "logging": loggingPort} {
		if p == "" || p == "0" {
			var err error
			if p, err = FreePort(); err != nil {
				return "", err
			}
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return "", fmt.Errorf("auth emulator %s port %q: %w", name, p, err)
		}
		cfg["emulators"].(map[string]any)[name] = map[string]any{"host": host, "port": n}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("auth emulator config: %w", err)
	}
	path := filepath.Join(dir, "firebase.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", fmt.Errorf("auth emulator config: %w", err)
	}
	return path, nil
}
