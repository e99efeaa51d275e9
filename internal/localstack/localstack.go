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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/sources"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/rules"
)

// ServeFunctionsCommand is the argument that makes the localstack binary serve the functions.
const ServeFunctionsCommand = "serve-functions"

// emulatorStartTimeout bounds an emulator's start-up (about 2 s on an idle machine).
const emulatorStartTimeout = 90 * time.Second

// Options say where the stack listens.
type Options struct {
	// Project is the Google Cloud project ID the emulators and functions use.
	Project string
	// FunctionsPort, FirestorePort, PubSubPort and AuthPort (the Firebase Auth emulator) are
	// loopback ports.
	FunctionsPort, FirestorePort, PubSubPort, AuthPort string
	// AppPort is the loopback port of the live example app.
	AppPort string
	// NoAuth leaves the Firebase Auth emulator out (LOCALSTACK_AUTH=false), e.g. for load runs.
	NoAuth bool
	// WebDir is the npm project (web/) whose node_modules hold firebase-tools and the example app.
	WebDir string
	// LogDir receives the emulators' logs.
	LogDir string
	// SchedulerPeriod is how often the stand-in for Cloud Scheduler ticks RollupScheduled.
	SchedulerPeriod time.Duration
	// Instances is how many functions processes serve the functions. With more than one, each
	// listens on a port of its own and a Balancer on FunctionsPort spreads requests, events and
	// Pub/Sub pushes over them, as Cloud Run does over the instances of a service.
	Instances int
	// FunctionsFirestore, when set, is the Firestore address the functions processes use instead of
	// the emulator's own (e.g. a fault-injecting proxy in front of it).
	FunctionsFirestore string
	// RulesFile is the Firestore security rules file loaded into the emulator, as production's
	// rules are deployed (an absolute path). By default, the example app's ruleset with the
	// counters' block added (firestore.example-app.rules), as an app's project has one ruleset.
	RulesFile string
	// EventCopies is how many times the event bridge delivers each Firestore event (1, or more to
	// play Eventarc's at-least-once delivery: redeliveries of one event under its ID), from
	// LOCALSTACK_EVENT_COPIES.
	EventCopies int
}

// OptionsFromEnv reads PORT, GOOGLE_CLOUD_PROJECT, FIRESTORE_PORT, PUBSUB_PORT, AUTH_PORT, APP_PORT,
// LOCALSTACK_LOGS, LOCALSTACK_TICK, FIRESTORE_RULES, LOCALSTACK_WEB, LOCALSTACK_AUTH,
// LOCALSTACK_INSTANCES, LOCALSTACK_FUNCTIONS_FIRESTORE and LOCALSTACK_EVENT_COPIES, with the defaults
// of docs/development.md.
func OptionsFromEnv() (Options, error) {
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	// Cloud Scheduler's granularity is one minute; LOCALSTACK_TICK shortens it to watch sweeps.
	tick, err := time.ParseDuration(env("LOCALSTACK_TICK", "1m"))
	if err != nil || tick <= 0 {
		return Options{}, fmt.Errorf("LOCALSTACK_TICK=%q: must be a positive Go duration such as 1m or 10s", os.Getenv("LOCALSTACK_TICK"))
	}
	instances, err := strconv.Atoi(env("LOCALSTACK_INSTANCES", "1"))
	if err != nil || instances < 1 {
		return Options{}, fmt.Errorf("LOCALSTACK_INSTANCES=%q: must be a whole number of functions processes, 1 or more", os.Getenv("LOCALSTACK_INSTANCES"))
	}
	copies, err := strconv.Atoi(env("LOCALSTACK_EVENT_COPIES", "1"))
	if err != nil || copies < 1 {
		return Options{}, fmt.Errorf("LOCALSTACK_EVENT_COPIES=%q: must be how many times each Firestore event is delivered, 1 or more", os.Getenv("LOCALSTACK_EVENT_COPIES"))
	}
	// The stack's project is the example app's: its own rules with the counters' block, one ruleset.
	rules, err := repoPath(os.Getenv("FIRESTORE_RULES"), "firestore.example-app.rules")
	if err != nil {
		return Options{}, fmt.Errorf("FIRESTORE_RULES: %w", err)
	}
	web, err := repoPath(os.Getenv("LOCALSTACK_WEB"), "web")
	if err != nil {
		return Options{}, fmt.Errorf("LOCALSTACK_WEB: %w", err)
	}
	return Options{
		RulesFile:          rules,
		WebDir:             web,
		AuthPort:           env("AUTH_PORT", "9099"),
		AppPort:            env("APP_PORT", "8000"),
		NoAuth:             os.Getenv("LOCALSTACK_AUTH") == "false",
		Project:            env("GOOGLE_CLOUD_PROJECT", "demo-counters"),
		FunctionsPort:      env("PORT", "8080"),
		FirestorePort:      env("FIRESTORE_PORT", "8081"),
		PubSubPort:         env("PUBSUB_PORT", "8085"),
		LogDir:             env("LOCALSTACK_LOGS", ".localstack"),
		SchedulerPeriod:    tick,
		Instances:          instances,
		FunctionsFirestore: os.Getenv("LOCALSTACK_FUNCTIONS_FIRESTORE"),
		EventCopies:        copies,
	}, nil
}

// repoPath is the absolute path of value, or when value is empty, of name in the repository that
// holds the working directory (the nearest parent with go.mod and name), so the stack finds its files
// from any package directory a test runs in.
func repoPath(value, name string) (string, error) {
	if value != "" {
		return filepath.Abs(value)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		_, errMod := os.Stat(filepath.Join(d, "go.mod"))
		_, errName := os.Stat(filepath.Join(d, name))
		if errMod == nil && errName == nil {
			return filepath.Join(d, name), nil
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, name), nil
		}
	}
}

// Emulators are the running Firestore, Pub/Sub and Firebase Auth emulators.
type Emulators struct {
	Firestore, PubSub, Auth *emulators.Emulator
}

// StartEmulators starts the emulators in parallel, logging to files in o.LogDir.
func StartEmulators(ctx context.Context, o Options) (*Emulators, error) {
	logDir := o.LogDir
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
		authErr      error
	)
	wg.Go(func() {
		e.Firestore, fsErr = start(emulators.Firestore(), loopback(o.FirestorePort), "firestore.log")
	})
	wg.Go(func() { e.PubSub, psErr = start(emulators.PubSub(), loopback(o.PubSubPort), "pubsub.log") })
	wg.Go(func() {
		if o.NoAuth {
			return
		}
		logs, err := os.Create(filepath.Join(logDir, "auth.log"))
		if err != nil {
			authErr = fmt.Errorf("auth emulator log: %w", err)
			return
		}
		defer logs.Close()
		// Node loads firebase-tools slowly on a busy machine: allow it twice an emulator's time.
		// firebase-tools has exited at once now and then (twice in about 60 starts while the other
		// emulators started beside it; cause not found): it is started once more, with fresh hub and
		// logging ports, and auth.log keeps both attempts' output.
		for attempt := 1; ; attempt++ {
			e.Auth, authErr = emulators.StartAuth(ctx, o.WebDir, o.Project, loopback(o.AuthPort), logs, 2*emulatorStartTimeout)
			if authErr == nil || attempt == 2 || ctx.Err() != nil {
				return
			}
			fmt.Fprintf(logs, "localstack: %v; starting it once more\n", authErr)
		}
	})
	wg.Wait()
	if err := errors.Join(fsErr, psErr, authErr); err != nil {
		e.Stop()
		return nil, err
	}
	return &e, nil
}

// Env is the environment that points client libraries at the emulators.
func (e *Emulators) Env() []string {
	env := []string{
		e.Firestore.Kind.HostEnv + "=" + e.Firestore.HostPort,
		e.PubSub.Kind.HostEnv + "=" + e.PubSub.HostPort,
	}
	if e.Auth != nil {
		env = append(env, e.Auth.Kind.HostEnv+"="+e.Auth.HostPort)
	}
	return env
}

// authAddr is the Auth emulator's address, or "off".
func (e *Emulators) authAddr() string {
	if e.Auth == nil {
		return "off"
	}
	return e.Auth.HostPort
}

// Stop stops whichever emulators are running.
func (e *Emulators) Stop() {
	for _, em := range []*emulators.Emulator{e.Firestore, e.PubSub, e.Auth} {
		if em != nil {
			em.Stop()
		}
	}
}

// Stack is the running local system.
type Stack struct {
	// Options are where it listens.
	Options Options
	// Emulators are the running emulators.
	Emulators *Emulators
	// FunctionsURL is the base URL of the functions, e.g. http://127.0.0.1:8080.
	FunctionsURL string
	// Events delivers the Firestore emulator's document changes to the functions as events.
	Events *EventBridge
	// App serves the live example app.
	App *appServer

	// Balancer spreads requests over the functions processes when there are several (else nil).
	Balancer *Balancer

	functions     []*supervisor
	stopScheduler func()
	stopPubSub    func()
}

// Start starts the emulators, the functions process and the event wiring, and returns when every
// part answers.
func Start(ctx context.Context, o Options, out io.Writer) (_ *Stack, err error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, err
	}
	counted, err := sources.Load(cfg.CounterSources, cfg.Schema())
	if err != nil {
		return nil, err
	}
	bridge, err := startEventBridge(out, eventsInFlight(), o.EventCopies)
	if err != nil {
		return nil, err
	}
	emus, err := StartEmulators(ctx, o)
	if err != nil {
		bridge.stop()
		return nil, err
	}
	s := &Stack{Options: o, Emulators: emus, FunctionsURL: "http://" + loopback(o.FunctionsPort), Events: bridge}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if err := emulators.LoadRulesFile(ctx, emus.Firestore.HostPort, o.Project, o.RulesFile); err != nil {
		return nil, err
	}
	if err := bridge.watchFirestoreTriggers(ctx, emus.Firestore.HostPort, o.Project, s.FunctionsURL, cfg.Schema(), counted); err != nil {
		return nil, err
	}
	if err := s.startFunctions(ctx, out); err != nil {
		return nil, err
	}
	if s.stopPubSub, err = s.wirePubSub(ctx, out); err != nil {
		return nil, err
	}
	if s.stopScheduler, err = s.startScheduler(ctx, o.SchedulerPeriod, out); err != nil {
		return nil, err
	}
	if s.App, err = startAppServer(s, loopback(o.AppPort)); err != nil {
		return nil, err
	}
	return s, nil
}

// Env is the environment of a client of the stack: the emulators' addresses, the project,
// LOCALSTACK_FUNCTIONS_URL (the functions' base URL), LOCALSTACK_EVENTS_STATS_URL (the event
// bridge's counts), LOCALSTACK_RULES_FILE (the security rules the stack loaded) and
// LOCALSTACK_APP_URL (the live example app).
func (s *Stack) Env() []string {
	env := s.Emulators.Env()
	if s.App != nil {
		env = append(env, "LOCALSTACK_APP_URL="+s.App.URL())
	}
	return append(env,
		"GOOGLE_CLOUD_PROJECT="+s.Options.Project,
		emulators.EnvRulesFile+"="+s.Options.RulesFile,
		"LOCALSTACK_FUNCTIONS_URL="+s.FunctionsURL,
		"LOCALSTACK_EVENTS_STATS_URL=http://"+s.Events.Addr()+"/stats")
}

// Stop stops everything the stack started.
func (s *Stack) Stop() {
	if s.App != nil {
		s.App.stop()
	}
	if s.stopScheduler != nil {
		s.stopScheduler()
	}
	if s.stopPubSub != nil {
		s.stopPubSub()
	}
	// All instances get SIGTERM at once, so stopping K of them takes one grace period, not K.
	for _, f := range s.functions {
		f.cancel()
	}
	for _, f := range s.functions {
		f.stop()
	}
	if s.Balancer != nil {
		s.Balancer.stop()
	}
	s.Events.stop()
	s.Emulators.Stop()
}

// startFunctions starts the functions processes, and the balancer in front of them when there are
// several, and waits until every one answers.
func (s *Stack) startFunctions(ctx context.Context, out io.Writer) error {
	o := s.Options
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the localstack binary: %w", err)
	}
	env := append(os.Environ(), s.Env()...)
	env = append(env, "LOCAL_ONLY=true")
	if _, set := os.LookupEnv("EXTENSION_FOLDS"); !set {
		// The example app's extension documents, as firestore.extension-clients.rules opens them.
		env = append(env, "EXTENSION_FOLDS="+rules.ExampleFolds)
	}
	if o.FunctionsFirestore != "" { // the last of duplicate variables wins
		env = append(env, s.Emulators.Firestore.Kind.HostEnv+"="+o.FunctionsFirestore)
	}
	ports := []string{o.FunctionsPort}
	if o.Instances > 1 {
		if ports, err = emulators.FreePorts(o.Instances); err != nil {
			return err
		}
	}
	urls := make([]string, len(ports))
	for i, port := range ports {
		urls[i] = "http://" + loopback(port)
		s.functions = append(s.functions, superviseFunctions(ctx, []string{self, ServeFunctionsCommand}, slices.Concat(env, []string{"PORT=" + port}), out))
	}
	for _, u := range urls {
		if err := waitHTTP(ctx, u+"/"+functions.EntryCount, 60*time.Second); err != nil {
			return fmt.Errorf("functions: %w", err)
		}
	}
	if o.Instances > 1 {
		if s.Balancer, err = startBalancer(loopback(o.FunctionsPort), urls, out); err != nil {
			return err
		}
	}
	return nil
}

// loopback is the IPv4 loopback address with port.
func loopback(port string) string { return net.JoinHostPort("127.0.0.1", port) }

// Run starts the whole stack, prints one line with "ready" and the URLs when everything answers, and
// runs until ctx ends; then it stops everything it started.
func Run(ctx context.Context, o Options, out io.Writer) error {
	s, err := Start(ctx, o, out)
	if err != nil {
		return err
	}
	defer s.Stop()
	urls := make([]string, len(manifest.EntryPoints))
	for i, name := range manifest.EntryPoints {
		urls[i] = s.FunctionsURL + "/" + name
	}
	fmt.Fprintf(out, "ready project=%s firestore=%s (security rules from %s loaded) pubsub=%s auth=%s instances=%d events=http://%s/stats functions: %s example app: %s (emulator logs in %s; Ctrl-C stops)\n",
		o.Project, s.Emulators.Firestore.HostPort, o.RulesFile, s.Emulators.PubSub.HostPort, s.Emulators.authAddr(),
		len(s.functions), s.Events.Addr(), strings.Join(urls, " "), s.App.URL(), o.LogDir)
	<-ctx.Done()
	fmt.Fprintln(out, "stopping")
	return nil
}

// Exec starts the whole stack on free ports, runs argv with the stack's Env (and, in
// LOCALSTACK_FUNCTIONS_LOG, the file that receives the functions' logs), stops the stack, and returns
// argv's exit code. Tests run this way share one stack.
func Exec(ctx context.Context, o Options, argv []string) (int, error) {
	ports, err := emulators.FreePorts(5)
	if err != nil {
		return 0, err
	}
	o.FunctionsPort, o.FirestorePort, o.PubSubPort, o.AuthPort, o.AppPort = ports[0], ports[1], ports[2], ports[3], ports[4]
	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return 0, fmt.Errorf("log directory: %w", err)
	}
	logPath, err := filepath.Abs(filepath.Join(o.LogDir, "functions.log"))
	if err != nil {
		return 0, err
	}
	logs, err := os.Create(logPath)
	if err != nil {
		return 0, fmt.Errorf("functions log: %w", err)
	}
	defer logs.Close()
	s, err := Start(ctx, o, logs)
	if err != nil {
		return 0, err
	}
	defer s.Stop()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), s.Env()...)
	cmd.Env = append(cmd.Env, "LOCALSTACK_FUNCTIONS_LOG="+logPath)
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
