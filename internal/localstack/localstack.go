// Package localstack assembles the counters system on one machine: the Firestore and Pub/Sub
// emulators, a supervised process that serves every function, and the wiring that delivers events to
// the functions in their production wire formats.
package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/emulators"
)

// ServeFunctionsCommand is the argument that makes the localstack binary serve the functions.
const ServeFunctionsCommand = "serve-functions"

// emulatorStartTimeout bounds an emulator's start-up (about 2 s on an idle machine).
const emulatorStartTimeout = 90 * time.Second

// Options say where the stack listens.
type Options struct {
	// Project is the Google Cloud project ID the emulators and functions use.
	Project string
	// FunctionsPort, FirestorePort and PubSubPort are loopback ports.
	FunctionsPort, FirestorePort, PubSubPort string
	// LogDir receives the emulators' logs.
	LogDir string
}

// OptionsFromEnv reads PORT, GOOGLE_CLOUD_PROJECT, FIRESTORE_PORT, PUBSUB_PORT and LOCALSTACK_LOGS,
// with the defaults of the README.
func OptionsFromEnv() Options {
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	return Options{
		Project:       env("GOOGLE_CLOUD_PROJECT", "demo-counters"),
		FunctionsPort: env("PORT", "8080"),
		FirestorePort: env("FIRESTORE_PORT", "8081"),
		PubSubPort:    env("PUBSUB_PORT", "8085"),
		LogDir:        env("LOCALSTACK_LOGS", ".localstack"),
	}
}

// Emulators are the running Firestore and Pub/Sub emulators.
type Emulators struct {
	Firestore, PubSub *emulators.Emulator
}

// StartEmulators starts both emulators in parallel, logging to files in logDir.
func StartEmulators(ctx context.Context, logDir, firestoreAddr, pubsubAddr string) (*Emulators, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("emulator log directory: %w", err)
	}
	start := func(k emulators.Kind, addr, logName string) (*emulators.Emulator, error) {
		logs, err := os.Create(filepath.Join(logDir, logName))
		if err != nil {
			return nil, fmt.Errorf("%s emulator log: %w", k.Name, err)
		}
		// The emulator's process holds its own copy of the file descriptor.
		defer logs.Close()
		return emulators.Start(ctx, k, addr, logs, emulatorStartTimeout)
	}
	var (
		e            Emulators
		wg           sync.WaitGroup
		fsErr, psErr error
	)
	wg.Go(func() { e.Firestore, fsErr = start(emulators.Firestore(), firestoreAddr, "firestore.log") })
	wg.Go(func() { e.PubSub, psErr = start(emulators.PubSub(), pubsubAddr, "pubsub.log") })
	wg.Wait()
	if err := errors.Join(fsErr, psErr); err != nil {
		e.Stop()
		return nil, err
	}
	return &e, nil
}

// Env is the environment that points client libraries at the emulators.
func (e *Emulators) Env() []string {
	return []string{
		e.Firestore.Kind.HostEnv + "=" + e.Firestore.HostPort,
		e.PubSub.Kind.HostEnv + "=" + e.PubSub.HostPort,
	}
}

// Stop stops whichever emulators are running.
func (e *Emulators) Stop() {
	for _, em := range []*emulators.Emulator{e.Firestore, e.PubSub} {
		if em != nil {
			em.Stop()
		}
	}
}

// Run starts the whole stack, prints one line with "ready" and the URLs when everything answers, and
// runs until ctx ends; then it stops everything it started.
func Run(ctx context.Context, o Options, out io.Writer) error {
	loopback := func(port string) string { return net.JoinHostPort("127.0.0.1", port) }
	emus, err := StartEmulators(ctx, o.LogDir, loopback(o.FirestorePort), loopback(o.PubSubPort))
	if err != nil {
		return err
	}
	defer emus.Stop()

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the localstack binary: %w", err)
	}
	env := append(os.Environ(), emus.Env()...)
	env = append(env, "GOOGLE_CLOUD_PROJECT="+o.Project, "PORT="+o.FunctionsPort, "LOCAL_ONLY=true")
	fns := superviseFunctions(ctx, []string{self, ServeFunctionsCommand}, env, out)
	defer fns.stop()
	base := "http://" + loopback(o.FunctionsPort)
	if err := waitHTTP(ctx, base+"/"+functions.EntryCount, 60*time.Second); err != nil {
		return fmt.Errorf("functions: %w", err)
	}

	urls := make([]string, len(functions.EntryPoints))
	for i, name := range functions.EntryPoints {
		urls[i] = base + "/" + name
	}
	fmt.Fprintf(out, "ready project=%s firestore=%s pubsub=%s functions: %s (emulator logs in %s; Ctrl-C stops)\n",
		o.Project, emus.Firestore.HostPort, emus.PubSub.HostPort, strings.Join(urls, " "), o.LogDir)
	<-ctx.Done()
	fmt.Fprintln(out, "stopping")
	return nil
}

// Exec starts the emulators on free ports, runs argv with their addresses in the environment, stops
// them, and returns argv's exit code.
func Exec(ctx context.Context, o Options, argv []string) (int, error) {
	fsAddr, err := emulators.FreeHostPort()
	if err != nil {
		return 0, err
	}
	psAddr, err := emulators.FreeHostPort()
	if err != nil {
		return 0, err
	}
	emus, err := StartEmulators(ctx, o.LogDir, fsAddr, psAddr)
	if err != nil {
		return 0, err
	}
	defer emus.Stop()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), emus.Env()...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("run %s: %w", argv[0], err)
	}
	return 0, nil
}
