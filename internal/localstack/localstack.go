// Package localstack runs the counters system on one machine: the emulators, supervised functions
// processes, and event delivery in production's wire formats. See docs/development.md.
package localstack

import (
	"cmp"
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

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/sources"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/rules"
)

// ServeFunctionsCommand is the argument that makes the localstack binary serve the functions.
const ServeFunctionsCommand = "serve-functions"

// emulatorStartTimeout bounds an emulator's start-up (about 2 s on an idle machine);
// attachTimeout how long a running one named by its *_EMULATOR_HOST may take to answer.
const (
	emulatorStartTimeout = 90 * time.Second
	attachTimeout        = 30 * time.Second
)

// Options configure the stack.
type Options struct {
	Project string
	// FunctionsPort, FirestorePort, PubSubPort and AuthPort are loopback ports.
	FunctionsPort, FirestorePort, PubSubPort, AuthPort string
	// AppPort is the live example app's.
	AppPort string
	// EventsPort serves the event bridge's /stats and /deliveries.
	EventsPort string
	// FirestoreWebChannelPort and FirestoreWebSocketPort are the Firestore emulator's other ports.
	FirestoreWebChannelPort, FirestoreWebSocketPort string
	// AuthHubPort and AuthLoggingPort are firebase-tools' emulator hub and logging server.
	AuthHubPort, AuthLoggingPort string
	// InstancesPort: with Instances > 1, instance i (from 0) listens on InstancesPort+i.
	// Each port "" or "0" is one the OS picks (OSPickedPorts).
	InstancesPort   string
	NoAuth          bool   // no Firebase Auth emulator
	WebDir          string // npm project with firebase-tools and the app
	LogDir          string
	SchedulerPeriod time.Duration // of the Cloud Scheduler stand-in
	// Instances > 1 runs that many functions processes behind a Balancer on FunctionsPort.
	Instances          int
	FunctionsFirestore string // if set, the functions' Firestore address (e.g. a fault proxy)
	// AttachFirestore, AttachPubSub and AttachAuth are running emulators' HOST:PORT (the
	// *_EMULATOR_HOST variables): each one set is used as it is, none of its kind is started.
	AttachFirestore, AttachPubSub, AttachAuth string
	RulesFile                                 string // absolute path of the rules loaded into the emulator
	// RulesNamed says FIRESTORE_RULES named RulesFile: only then are rules loaded into an attached
	// Firestore emulator, whose rules are otherwise left as they are.
	RulesNamed bool
	// CounterSources is COUNTER_SOURCES of the functions: an absolute path, or inline declarations.
	CounterSources string
	// DataDir, when set, keeps the Firestore emulator's data across restarts (LOCALSTACK_DATA).
	DataDir     string
	EventCopies int // deliveries of each Firestore event (>1 plays at-least-once)
}

// OptionsFromEnv reads Options from PORT, GOOGLE_CLOUD_PROJECT, *_PORT, *_EMULATOR_HOST,
// FIRESTORE_RULES and LOCALSTACK_* variables, with the defaults of docs/development.md.
func OptionsFromEnv() (Options, error) {
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
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
	rules, err := repoPath(os.Getenv("FIRESTORE_RULES"), "firestore.example-app.rules")
	if err != nil {
		return Options{}, fmt.Errorf("FIRESTORE_RULES: %w", err)
	}
	web, err := repoPath(os.Getenv("LOCALSTACK_WEB"), "web")
	if err != nil {
		return Options{}, fmt.Errorf("LOCALSTACK_WEB: %w", err)
	}
	declared, err := counterSources(os.Getenv("COUNTER_SOURCES"))
	if err != nil {
		return Options{}, fmt.Errorf("COUNTER_SOURCES: %w", err)
	}
	var data string
	if v := os.Getenv("LOCALSTACK_DATA"); v != "" {
		if data, err = filepath.Abs(v); err != nil {
			return Options{}, fmt.Errorf("LOCALSTACK_DATA: %w", err)
		}
	}
	return Options{
		RulesFile:               rules,
		RulesNamed:              os.Getenv("FIRESTORE_RULES") != "",
		AttachFirestore:         os.Getenv(emulators.Firestore().HostEnv),
		AttachPubSub:            os.Getenv(emulators.PubSub().HostEnv),
		AttachAuth:              os.Getenv(emulators.Auth().HostEnv),
		CounterSources:          declared,
		DataDir:                 data,
		WebDir:                  web,
		AuthPort:                env("AUTH_PORT", "9099"),
		AppPort:                 env("APP_PORT", "8000"),
		EventsPort:              env("EVENTS_PORT", "8086"),
		AuthHubPort:             env("AUTH_HUB_PORT", "4400"),
		AuthLoggingPort:         env("AUTH_LOGGING_PORT", "4500"),
		InstancesPort:           env("INSTANCES_PORT", "8090"),
		FirestoreWebChannelPort: env("FIRESTORE_WEBCHANNEL_PORT", "8082"),
		FirestoreWebSocketPort:  env("FIRESTORE_WEBSOCKET_PORT", "8083"),
		NoAuth:                  os.Getenv("LOCALSTACK_AUTH") == "false",
		Project:                 env("GOOGLE_CLOUD_PROJECT", "demo-counters"),
		FunctionsPort:           env("PORT", functionsPortBeside(os.Getenv(emulators.Firestore().HostEnv), os.Getenv(emulators.PubSub().HostEnv), os.Getenv(emulators.Auth().HostEnv))),
		FirestorePort:           env("FIRESTORE_PORT", "8081"),
		PubSubPort:              env("PUBSUB_PORT", "8085"),
		LogDir:                  env("LOCALSTACK_LOGS", ".localstack"),
		SchedulerPeriod:         tick,
		Instances:               instances,
		FunctionsFirestore:      os.Getenv("LOCALSTACK_FUNCTIONS_FIRESTORE"),
		EventCopies:             copies,
	}, nil
}

// stackFolds is the functions' EXTENSION_FOLDS: cfg's, or when unset the example app's.
func stackFolds(cfg config.Config) extshards.Targets {
	if _, set := os.LookupEnv("EXTENSION_FOLDS"); set {
		return cfg.ExtensionTargets()
	}
	folds, _ := extshards.ParseTargets(rules.ExampleFolds)
	return folds
}

// ExampleCounterSources is the example app's declarations, the local stack's when COUNTER_SOURCES is
// unset; a deployment declares none unless its operator does (counter-sources.json is empty).
const ExampleCounterSources = "web/counter-sources.json"

// counterSources is value as the functions' COUNTER_SOURCES: inline declarations as they are, a
// path made absolute, or, if empty, the example app's file.
func counterSources(value string) (string, error) {
	if strings.HasPrefix(strings.TrimSpace(value), "[") {
		return value, nil
	}
	return repoPath(value, ExampleCounterSources)
}

// repoPath is value made absolute or, if empty, name in the nearest parent directory holding go.mod
// and name.
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

// StartEmulators starts the emulators in parallel, logging to files in o.LogDir, or attaches to those
// o names running.
func StartEmulators(ctx context.Context, o Options) (*Emulators, error) {
	logDir := o.LogDir
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("emulator log directory: %w", err)
	}
	if o.DataDir != "" && o.AttachFirestore != "" {
		return nil, fmt.Errorf("LOCALSTACK_DATA keeps the data of a Firestore emulator the stack starts; the one at %s keeps its own (e.g. firebase emulators:start --import DIR --export-on-exit)", o.AttachFirestore)
	}
	// start starts k on addr, or attaches to the running one at attach.
	start := func(k emulators.Kind, attach, addr, logName string) (*emulators.Emulator, error) {
		if attach != "" {
			return emulators.Attach(ctx, k, attach, attachTimeout)
		}
		logs, err := os.Create(filepath.Join(logDir, logName))
		if err != nil {
			return nil, fmt.Errorf("%s emulator log: %w", k.Name, err)
		}
		defer logs.Close() // the emulator holds its own descriptor
		return emulators.Start(ctx, k, addr, logs, emulatorStartTimeout)
	}
	var (
		e            Emulators
		wg           sync.WaitGroup
		fsErr, psErr error
		authErr      error
	)
	firestore := emulators.Firestore()
	if o.DataDir != "" {
		export, err := latestExport(o.DataDir)
		if err != nil {
			return nil, fmt.Errorf("LOCALSTACK_DATA: %w", err)
		}
		if export != "" {
			firestore = emulators.FirestoreImporting(export)
		}
	}
	wg.Go(func() {
		var ports []string
		if !osPicked(o.FirestoreWebChannelPort) {
			ports = append(ports, "--webchannel_port="+o.FirestoreWebChannelPort)
		}
		if !osPicked(o.FirestoreWebSocketPort) {
			ports = append(ports, "--websocket_port="+o.FirestoreWebSocketPort)
		}
		e.Firestore, fsErr = start(firestore.WithArgs(ports...), o.AttachFirestore, loopback(o.FirestorePort), "firestore.log")
	})
	wg.Go(func() {
		e.PubSub, psErr = start(emulators.PubSub(), o.AttachPubSub, loopback(o.PubSubPort), "pubsub.log")
	})
	wg.Go(func() {
		if o.NoAuth {
			return
		}
		if o.AttachAuth != "" {
			e.Auth, authErr = emulators.Attach(ctx, emulators.Auth(), o.AttachAuth, attachTimeout)
			return
		}
		logs, err := os.Create(filepath.Join(logDir, "auth.log"))
		if err != nil {
			authErr = fmt.Errorf("auth emulator log: %w", err)
			return
		}
		defer logs.Close()
		// firebase-tools is slow to load, and now and then exits at once: start it twice at most.
		for attempt := 1; ; attempt++ {
			e.Auth, authErr = emulators.StartAuth(ctx, o.WebDir, o.Project, loopback(o.AuthPort), o.AuthHubPort, o.AuthLoggingPort, logs, 2*emulatorStartTimeout)
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

// Which names the emulators attached to and those started, as the ready line's keys, comma-separated
// ("none" if no one).
func (e *Emulators) Which() (attached, started string) {
	var a, s []string
	for _, em := range []struct {
		name string
		*emulators.Emulator
	}{{"firestore", e.Firestore}, {"pubsub", e.PubSub}, {"auth", e.Auth}} {
		switch {
		case em.Emulator == nil:
		case em.Attached:
			a = append(a, em.name)
		default:
			s = append(s, em.name)
		}
	}
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ",")
	}
	return list(a), list(s)
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

// Stack is the running local system. FunctionsURL is the functions' base URL; Balancer is nil with
// one instance.
type Stack struct {
	Options      Options
	Emulators    *Emulators
	FunctionsURL string
	Events       *EventBridge
	App          *appServer

	Balancer *Balancer

	// Database is the Firestore database the functions count in and the events come from.
	Database string
	// RulesLoaded says the stack loaded Options.RulesFile into the Firestore emulator.
	RulesLoaded bool

	functions     []*supervisor
	stopScheduler func()
	stopPubSub    func()
}

// Start starts every part and returns when all answer; on error it stops what it started.
func Start(ctx context.Context, o Options, out io.Writer) (_ *Stack, err error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, err
	}
	counted, err := sources.Load(o.CounterSources, cfg.Schema())
	if err == nil {
		err = counted.CheckFolds(stackFolds(cfg))
	}
	if err != nil {
		return nil, err
	}
	// A functions port taken (say by an attached emulator on 8080) would answer for the functions.
	if err := emulators.CheckPortFree(loopback(o.FunctionsPort)); err != nil {
		return nil, fmt.Errorf("the functions' PORT %s: %w; set PORT to a free port", o.FunctionsPort, err)
	}
	bridge, err := startEventBridge(out, loopback(o.EventsPort), eventsInFlight(), o.EventCopies)
	if err != nil {
		return nil, err
	}
	emus, err := StartEmulators(ctx, o)
	if err != nil {
		bridge.stop()
		return nil, err
	}
	s := &Stack{Options: o, Emulators: emus, FunctionsURL: "http://" + loopback(o.FunctionsPort), Events: bridge, Database: cfg.Database}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if s.RulesLoaded = !emus.Firestore.Attached || o.RulesNamed; s.RulesLoaded {
		text, err := stackRules(o.RulesFile, counted)
		if err != nil {
			return nil, err
		}
		if err := emulators.LoadRules(ctx, emus.Firestore.HostPort, o.Project, text); err != nil {
			return nil, err
		}
	}
	if err := bridge.watchFirestoreTriggers(ctx, emus.Firestore.HostPort, o.Project, cfg.Database, s.FunctionsURL, cfg.Schema(), counted); err != nil {
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

// Env is a stack client's environment: the emulators, the project and the LOCALSTACK_*_URL and
// (if it loaded rules) LOCALSTACK_RULES_FILE variables.
func (s *Stack) Env() []string {
	env := s.Emulators.Env()
	if s.App != nil {
		env = append(env, "LOCALSTACK_APP_URL="+s.App.URL())
	}
	if s.RulesLoaded {
		env = append(env, emulators.EnvRulesFile+"="+s.Options.RulesFile)
	}
	return append(env,
		"GOOGLE_CLOUD_PROJECT="+s.Options.Project,
		"LOCALSTACK_FUNCTIONS_URL="+s.FunctionsURL,
		"LOCALSTACK_EVENTS_STATS_URL=http://"+s.Events.Addr()+"/stats")
}

// Stop stops everything the stack started; emulators it attached to run on, their data kept.
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
	for _, f := range s.functions { // SIGTERM all first: one grace period in all
		f.cancel()
	}
	for _, f := range s.functions {
		f.stop()
	}
	if s.Balancer != nil {
		s.Balancer.stop()
	}
	s.Events.stop()
	if s.Options.DataDir != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := exportFirestore(ctx, s.Emulators.Firestore.HostPort, s.Options.Project, s.Options.DataDir); err != nil {
			fmt.Fprintf(os.Stderr, "localstack: %v; the data of this run is not kept\n", err)
		}
		cancel()
	}
	s.Emulators.Stop()
}

// startFunctions starts the functions processes, and the balancer if several, and waits until each
// answers.
func (s *Stack) startFunctions(ctx context.Context, out io.Writer) error {
	o := s.Options
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the localstack binary: %w", err)
	}
	env := append(os.Environ(), s.Env()...)
	env = append(env, "LOCAL_ONLY=true", "COUNTER_SOURCES="+o.CounterSources)
	if _, set := os.LookupEnv("EXTENSION_FOLDS"); !set {
		env = append(env, "EXTENSION_FOLDS="+rules.ExampleFolds)
	}
	if o.FunctionsFirestore != "" { // the last of duplicate variables wins
		env = append(env, s.Emulators.Firestore.Kind.HostEnv+"="+o.FunctionsFirestore)
	}
	ports := []string{o.FunctionsPort}
	if o.Instances > 1 {
		if ports, err = instancePorts(o.InstancesPort, o.Instances); err != nil {
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

// OSPickedPorts lets the OS pick the ports of the stack's inner parts (the event bridge, the
// emulators' other ports, the instances), for a stack whose caller sets only the ports it uses.
var OSPickedPorts = []string{"EVENTS_PORT=0", "FIRESTORE_WEBCHANNEL_PORT=0", "FIRESTORE_WEBSOCKET_PORT=0",
	"AUTH_HUB_PORT=0", "AUTH_LOGGING_PORT=0", "INSTANCES_PORT=0"}

// osPicked reports whether port leaves the choice to the OS ("" or "0").
func osPicked(port string) bool { return port == "" || port == "0" }

// instancePorts is n ports from base up (base "" or "0": n free ports).
func instancePorts(base string, n int) ([]string, error) {
	if osPicked(base) {
		return emulators.FreePorts(n)
	}
	first, err := strconv.Atoi(base)
	if err != nil || first < 1 || first+n-1 > 65535 {
		return nil, fmt.Errorf("INSTANCES_PORT=%q: must be a port with %d ports free from it up", base, n)
	}
	ports := make([]string, n)
	for i := range ports {
		ports[i] = strconv.Itoa(first + i)
	}
	return ports, nil
}

// loopback is the IPv4 loopback address with port (port "": one the OS picks).
func loopback(port string) string { return net.JoinHostPort("127.0.0.1", cmp.Or(port, "0")) }

// Run starts the stack, prints a "ready" line with the URLs, and stops it when ctx ends.
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
	rules := "security rules from " + o.RulesFile + " loaded"
	if !s.RulesLoaded {
		rules = "its security rules left as they are"
	}
	attached, started := s.Emulators.Which()
	fmt.Fprintf(out, "ready project=%s database=%s firestore=%s (%s) pubsub=%s auth=%s attached=%s started=%s instances=%d events=http://%s/stats functions: %s example app: %s (emulator logs in %s; Ctrl-C stops)\n",
		o.Project, s.Database, s.Emulators.Firestore.HostPort, rules, s.Emulators.PubSub.HostPort, s.Emulators.authAddr(),
		attached, started, len(s.functions), s.Events.Addr(), strings.Join(urls, " "), s.App.URL(), o.LogDir)
	<-ctx.Done()
	fmt.Fprintln(out, "stopping")
	return nil
}

// OnFreePorts sets every port of o to a free one (INSTANCES_PORT to the first of Instances free
// ones in a row is not promised: it is left "", which makes each instance's a free port).
func (o *Options) OnFreePorts() error {
	ports := []*string{&o.FunctionsPort, &o.FirestorePort, &o.PubSubPort, &o.AuthPort, &o.AppPort, &o.EventsPort,
		&o.FirestoreWebChannelPort, &o.FirestoreWebSocketPort, &o.AuthHubPort, &o.AuthLoggingPort}
	free, err := emulators.FreePorts(len(ports))
	if err != nil {
		return err
	}
	for i, p := range ports {
		*p = free[i]
	}
	o.InstancesPort = ""
	return nil
}

// Exec starts the stack on free ports, with emulators of its own (never attached), runs argv with its
// Env and LOCALSTACK_FUNCTIONS_LOG (the functions' log file), stops it, and returns argv's exit code.
func Exec(ctx context.Context, o Options, argv []string) (int, error) {
	o.AttachFirestore, o.AttachPubSub, o.AttachAuth = "", "", ""
	if err := o.OnFreePorts(); err != nil {
		return 0, err
	}
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

// stackRules is the rules file at path with the roll-ups of declared's "read": "none" counters
// closed to clients, as make rules composes them.
func stackRules(path string, declared *sources.Set) (string, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("security rules: %w", err)
	}
	return string(rules.CloseReads(text, declared.UnreadableIDs())), nil
}

// functionsPortBeside is the functions' default port beside the attached emulators at addrs:
// 8080, or 8088 when one of them is on 8080 (the Emulator Suite's Firestore default).
func functionsPortBeside(addrs ...string) string {
	for _, a := range addrs {
		if _, port, err := net.SplitHostPort(a); err == nil && port == "8080" {
			return "8088"
		}
	}
	return "8080"
}
