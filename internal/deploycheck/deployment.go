// Package deploycheck checks the two deployments of the system, the gcloud commands that
// scripts/deploy.sh --dry-run prints and the Terraform module in terraform/, offline:
//   - against the code: each is read into one shape (Deployment: ParseDryRun, LoadTerraform) and
//     compared (Diff) with the one deployment the code asks for (Expected): the trigger table
//     functions.Triggers joined with deploy.sh's FUNCTION_SETTINGS, the runtime go.mod asks for and
//     the environment variables shared/ reads. Both equal to one expectation, they equal each other;
//   - with the real tools: the installed gcloud parses every command (GcloudParses), the files each
//     path uploads are built as the buildpack builds them (GcloudUpload, ArchiveUpload, BuildUpload),
//     and the module is checked against the real providers' schema (CheckModuleSchema).
package deploycheck

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/shared"
)

// Function is one deployed function, as the code, deploy.sh and Terraform each describe it.
type Function struct {
	// Name is the deployed function's name.
	Name string
	// EntryPoint is the registered name it runs; Runtime the Cloud Functions runtime, e.g. go126.
	EntryPoint, Runtime string
	// EventType is the CloudEvent type of its trigger, "" for HTTP; Topic that of a Pub/Sub trigger.
	EventType, Topic string
	// DocumentPattern and Database are the filters of a Firestore trigger.
	DocumentPattern, Database string
	// TriggerLocation is where the Eventarc trigger of an event function lives.
	TriggerLocation string
	// Retry says whether failed events are redelivered; Public whether allUsers may invoke it.
	Retry, Public bool
	// Memory (e.g. 256Mi) and CPU (vCPUs, "" for the platform's default for the memory).
	Memory, CPU string
	// Concurrency is the most requests one instance serves at once; TimeoutSeconds bounds one
	// request or event; MaxInstances is the most instances it scales out to.
	Concurrency, TimeoutSeconds, MaxInstances int
	// Env is the environment it is deployed with (Diff compares it apart: see there).
	Env map[string]string
}

// DeadLetter is a dead-letter policy.
type DeadLetter struct {
	// Topic is the dead-letter topic's short name.
	Topic string
	// MaxDeliveryAttempts is how many deliveries fail before a message is parked.
	MaxDeliveryAttempts int
}

// Deployment is what one deployment creates, in the terms the checks compare. Diff compares every
// field but Source; the lists in any order.
type Deployment struct {
	// Source names the deployment in messages, e.g. "terraform".
	Source string
	// Functions maps each entry point to its function.
	Functions map[string]Function
	// DeadLetters maps a function's name to the dead-letter policy of its trigger's subscription.
	DeadLetters map[string]DeadLetter
	// Topics lists the Pub/Sub topics it creates; SubscribedTopics those it subscribes to itself;
	// SchedulerTopics those Cloud Scheduler jobs publish to.
	Topics, SubscribedTopics, SchedulerTopics []string
	// TTLFields, UnindexedFields and AscendingIndexFields list "collection.field" of every field with
	// a TTL policy, exempt from all indexing, and with exactly one (ascending) single-field index.
	TTLFields, UnindexedFields, AscendingIndexFields []string
}

func newDeployment(source string) Deployment {
	return Deployment{Source: source, Functions: map[string]Function{}, DeadLetters: map[string]DeadLetter{}}
}

// add records f, refusing a second function with the same entry point.
func (d *Deployment) add(f Function) error {
	if _, dup := d.Functions[f.EntryPoint]; dup {
		return fmt.Errorf("entry point %s is deployed twice", f.EntryPoint)
	}
	d.Functions[f.EntryPoint] = f
	return nil
}

// Options are the choices one deployment is made with, given alike to deploy.sh and Terraform.
type Options struct {
	// Project, Region and Database (ID) to deploy into.
	Project, Region, Database string
	// DatabaseLocation is where the Firestore database is; "" means the region.
	DatabaseLocation string
	// PublicIncrements lets allUsers invoke Increment.
	PublicIncrements bool
	// MaxDeliveryAttempts before an increment message is parked.
	MaxDeliveryAttempts int
	// Env gives the functions' optional variables, the collection names among them.
	Env map[string]string
}

// Expected is the deployment the code asks for with o: one function per entry point of
// functions.Triggers, with the name and settings of its row of settings (deploy.sh's
// FUNCTION_SETTINGS, SettingsTable), the runtime runtime, the topics the triggers use, the scheduler
// ticking RollupScheduled's topic, and the field settings of the collections the variables name.
func Expected(o Options, settings map[string]Function, runtime string) (Deployment, error) {
	schema := shared.DefaultConfig().Schema
	schema.Counters = cmp.Or(o.Env[shared.EnvCountersCollection], schema.Counters)
	schema.Rollups = cmp.Or(o.Env[shared.EnvRollupsCollection], schema.Rollups)
	schema.Dedupe = cmp.Or(o.Env[shared.EnvDedupeCollection], schema.Dedupe)
	env := map[string]string{shared.EnvProject: o.Project, shared.EnvDatabase: o.Database}
	maps.Copy(env, o.Env)

	want := newDeployment("the code")
	topics := map[string]bool{}
	for _, t := range functions.Triggers(schema) {
		f, ok := settings[t.EntryPoint]
		if !ok {
			return want, fmt.Errorf("FUNCTION_SETTINGS has no row for entry point %s", t.EntryPoint)
		}
		f.EntryPoint, f.Runtime, f.Env = t.EntryPoint, runtime, env
		f.EventType, f.Topic, f.DocumentPattern, f.Retry = t.EventType, t.Topic, t.DocumentPattern, t.Retry
		f.Public = o.PublicIncrements && t.EntryPoint == functions.EntryIncrement
		if t.EventType != "" {
			f.TriggerLocation = o.Region
		}
		if t.DocumentPattern != "" { // a Firestore trigger lives where the database is
			f.Database, f.TriggerLocation = o.Database, cmp.Or(o.DatabaseLocation, o.Region)
		}
		if t.DeadLetterTopic != "" {
			want.DeadLetters[f.Name] = DeadLetter{Topic: t.DeadLetterTopic, MaxDeliveryAttempts: o.MaxDeliveryAttempts}
			want.SubscribedTopics = append(want.SubscribedTopics, t.DeadLetterTopic) // keeps what is parked
		}
		for _, topic := range []string{t.Topic, t.DeadLetterTopic} {
			if topic != "" {
				topics[topic] = true
			}
		}
		want.Functions[t.EntryPoint] = f
	}
	if len(settings) != len(want.Functions) {
		return want, fmt.Errorf("FUNCTION_SETTINGS has rows for %v, the code registers %v", slices.Sorted(maps.Keys(settings)), slices.Sorted(maps.Keys(want.Functions)))
	}
	want.Topics = slices.Collect(maps.Keys(topics))
	field := func(collection, name string) string { return collection + "." + name }
	want.SchedulerTopics = []string{want.Functions[functions.EntryRollupScheduled].Topic}
	want.TTLFields = []string{field(schema.Dedupe, shared.FieldExpiresAt)}
	want.UnindexedFields = []string{field(schema.Dedupe, shared.FieldExpiresAt), field(schema.Rollups, shared.FieldUpdatedAt)}
	want.AscendingIndexFields = []string{field(shared.ShardsCollection, shared.FieldCount), field(shared.ShardsCollection, shared.FieldWrites)}
	return want, nil
}

// Diff lists every way got departs from want, each naming the deployment, the entry point and the
// property. A function's environment must hold every variable of want's, with its value, and no
// variable outside known (the names the code reads): a deployment may also set a variable to what
// the code would take anyway, as Terraform does with the collection names.
func Diff(want, got Deployment, known map[string]bool) []string {
	var problems []string
	differ := func(what string, g, w any) {
		if gs, ws := fmt.Sprintf("%+v", g), fmt.Sprintf("%+v", w); gs != ws {
			problems = append(problems, fmt.Sprintf("%s: %s is %s, want %s", got.Source, what, gs, ws))
		}
	}
	for _, entry := range slices.Sorted(maps.Keys(want.Functions)) {
		w, g := want.Functions[entry], got.Functions[entry]
		if g.EntryPoint == "" {
			problems = append(problems, fmt.Sprintf("%s: does not deploy entry point %s", got.Source, entry))
			continue
		}
		wv, gv := reflect.ValueOf(w), reflect.ValueOf(g)
		for i := range wv.NumField() {
			if name := wv.Type().Field(i).Name; name != "Env" {
				differ(entry+" "+name, gv.Field(i).Interface(), wv.Field(i).Interface())
			}
		}
		for _, name := range slices.Sorted(maps.Keys(w.Env)) {
			differ(fmt.Sprintf("%s env %s", entry, name), strconv.Quote(g.Env[name]), strconv.Quote(w.Env[name]))
		}
		for _, name := range slices.Sorted(maps.Keys(g.Env)) {
			if !known[name] {
				problems = append(problems, fmt.Sprintf("%s: %s sets %s, which the code does not read (no Env* constant in shared/)", got.Source, entry, name))
			}
		}
	}
	for entry := range got.Functions {
		if _, ok := want.Functions[entry]; !ok {
			problems = append(problems, fmt.Sprintf("%s: deploys entry point %q, which the code does not register (functions.Triggers)", got.Source, entry))
		}
	}
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := range wv.NumField() {
		w, g := wv.Field(i).Interface(), gv.Field(i).Interface()
		switch name := wv.Type().Field(i).Name; w := w.(type) {
		case []string:
			differ(name, slices.Sorted(slices.Values(g.([]string))), slices.Sorted(slices.Values(w)))
		case map[string]DeadLetter:
			differ(name, g, w)
		}
	}
	return problems
}

// PlatformProblems lists the settings of f that Cloud Functions (2nd gen) refuses or that leave a
// limit to the platform's default.
func PlatformProblems(f Function) []string {
	var problems []string
	if f.Memory == "" {
		problems = append(problems, "no memory: gcloud refuses --cpu without --memory, and the compute estimate needs it")
	}
	if cpu, err := strconv.ParseFloat(cmp.Or(f.CPU, "0"), 64); err != nil || (f.Concurrency > 1 && cpu < 1) {
		problems = append(problems, fmt.Sprintf("concurrency %d with cpu %q: Cloud Run serves more than one request at a time only with at least 1 vCPU", f.Concurrency, f.CPU))
	}
	maxTimeout := 3600 // HTTP functions
	if f.EventType != "" {
		maxTimeout = 540
	}
	if f.TimeoutSeconds < 1 || f.TimeoutSeconds > maxTimeout {
		problems = append(problems, fmt.Sprintf("timeout %ds: give one explicitly, 1 to %d s", f.TimeoutSeconds, maxTimeout))
	}
	if f.MaxInstances < 1 || f.Concurrency < 1 {
		problems = append(problems, fmt.Sprintf("max instances %d, concurrency %d: give both explicitly", f.MaxInstances, f.Concurrency))
	}
	return problems
}

var settingsRows = regexp.MustCompile(`(?s)\nreadonly FUNCTION_SETTINGS='\n(.*?)'`)

// SettingsTable reads the FUNCTION_SETTINGS table of deploy.sh (the script at path): per entry point,
// the function's name, memory, CPU ("-": the default), concurrency, timeout and max instances.
func SettingsTable(path string) (map[string]Function, error) {
	script, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read deploy.sh: %w", err)
	}
	m := settingsRows.FindSubmatch(script)
	if m == nil {
		return nil, fmt.Errorf("%s: no FUNCTION_SETTINGS table", path)
	}
	table := map[string]Function{}
	for _, row := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		c := strings.Fields(row)
		if len(c) != 7 {
			return nil, fmt.Errorf("FUNCTION_SETTINGS row %q: want 7 columns", row)
		}
		timeout, err := time.ParseDuration(c[5])
		if err != nil {
			return nil, fmt.Errorf("FUNCTION_SETTINGS row %q: %w", row, err)
		}
		table[c[1]] = Function{Name: c[0], Memory: c[2], CPU: strings.TrimPrefix(c[3], "-"), Concurrency: atoi(c[4]),
			TimeoutSeconds: int(timeout.Seconds()), MaxInstances: atoi(c[6])}
	}
	return table, nil
}

// atoi is strconv.Atoi with 0 for what is not a number: Diff then says the setting is missing.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

var envConst = regexp.MustCompile(`(?m)^\s*(Env\w+)\s*=\s*"([^"]+)"`)

// EnvNames returns the environment variable names the code reads: the values of the string
// constants named Env* in the non-test Go files of dir (the shared package).
func EnvNames(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	names := map[string]bool{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		for _, m := range envConst.FindAllSubmatch(src, -1) {
			names[string(m[2])] = true
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no Env* string constants in %s", dir)
	}
	return names, nil
}

var goLine = regexp.MustCompile(`(?m)^go 1\.(\d+)`)

// RuntimeForGoMod returns the Cloud Functions runtime that builds the module of goModPath: "go 1.26.0"
// needs go126.
func RuntimeForGoMod(goModPath string) (string, error) {
	data, err := os.ReadFile(goModPath)
	if err != nil {
		return "", fmt.Errorf("read go.mod: %w", err)
	}
	m := goLine.FindSubmatch(data)
	if m == nil {
		return "", fmt.Errorf("%s: no go 1.N line", goModPath)
	}
	return "go1" + string(m[1]), nil
}
