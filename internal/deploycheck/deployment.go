// Package deploycheck checks the two deployments of the system, the gcloud commands that
// scripts/deploy.sh --dry-run prints and the Terraform module in terraform/, offline:
//   - against the code: each is read into one shape (Deployment: DryRun, LoadTerraform) and
//     compared (Diff) with the one deployment the code asks for (Expected): the trigger table
//     functions.Triggers joined with deploy.sh's FUNCTION_SETTINGS, the runtime go.mod asks for and
//     the environment variables shared/ reads. Both equal to one expectation, they equal each other;
//   - with the real tools: the installed gcloud parses every command (GcloudParses), the files each
//     path uploads are built as the buildpack builds them (GcloudUpload, ArchiveUpload, BuildUpload),
//     and the module is checked against the real providers' schema (CheckModuleSchema).
package deploycheck

import (
	"cmp"
	"errors"
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

// Function is one deployed function, as the code, deploy.sh and Terraform each describe it: its
// name, the entry point it runs and the runtime; its trigger (EventType "" for HTTP; the Topic of a
// Pub/Sub trigger; the DocumentPattern and Database filters of a Firestore trigger; where the
// Eventarc trigger lives; whether failed events are retried); whether allUsers may invoke it; its
// memory, CPU ("" for the platform's default), concurrency, timeout and max instances; and its
// environment (which Diff compares apart).
type Function struct {
	Name, EntryPoint, Runtime                                    string
	EventType, Topic, DocumentPattern, Database, TriggerLocation string
	Retry, Public                                                bool
	Memory, CPU                                                  string
	Concurrency, TimeoutSeconds, MaxInstances                    int
	Env                                                          map[string]string
}

// DeadLetter is a dead-letter policy: the topic's short name, and how many deliveries fail before a
// message is parked there.
type DeadLetter struct {
	Topic               string
	MaxDeliveryAttempts int
}

// Deployment is what one deployment creates, in the terms Diff compares: its functions by entry
// point; the dead-letter policies of their triggers' subscriptions by function name; the Pub/Sub
// topics it creates, subscribes to itself and has Cloud Scheduler publish to; and "collection.field"
// of every field with a TTL policy, exempt from all indexes, or with one ascending index.
type Deployment struct {
	// Source names the deployment in messages, e.g. "terraform".
	Source                                           string
	Functions                                        map[string]Function
	DeadLetters                                      map[string]DeadLetter
	Topics, SubscribedTopics, SchedulerTopics        []string
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

// DefaultMaxDeliveryAttempts is what both paths use unless told otherwise (deploy.sh
// --max-delivery-attempts, var.max_delivery_attempts).
const DefaultMaxDeliveryAttempts = 10

// Options are the choices one deployment is made with, given alike to deploy.sh and Terraform; what
// is empty is left to the deployment's default: the code's database, the region for its location,
// DefaultMaxDeliveryAttempts. Env gives optional variables, collection names among them.
type Options struct {
	Project, Region, Database, DatabaseLocation string
	PublicIncrements                            bool
	MaxDeliveryAttempts                         int
	Env                                         map[string]string
}

// Code is what the repository says every deployment must be.
type Code struct {
	// Settings are the rows of deploy.sh's FUNCTION_SETTINGS by entry point: the function's name,
	// memory, CPU ("-": the default), concurrency, timeout and max instances.
	Settings map[string]Function
	// Runtime is the Cloud Functions runtime that builds go.mod's Go: "go 1.26.0" needs go126.
	Runtime string
	// Env holds the names of the variables the functions read: those shared.ParseConfig looks up.
	Env map[string]bool
}

var (
	settingsRows = regexp.MustCompile(`(?s)\nreadonly FUNCTION_SETTINGS='\n(.*?)'`)
	goLine       = regexp.MustCompile(`(?m)^go 1\.(\d+)`)
)

// ReadCode reads Code from the repository at root.
func ReadCode(root string) (Code, error) {
	c := Code{Settings: map[string]Function{}, Env: map[string]bool{}}
	_, _ = shared.ParseConfig(func(name string) (string, bool) { // nothing set: nothing refused
		c.Env[name] = true
		return "", false
	})
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return c, fmt.Errorf("read go.mod: %w", err)
	}
	m := goLine.FindSubmatch(goMod)
	if m == nil {
		return c, errors.New("go.mod: no go 1.N line")
	}
	c.Runtime = "go1" + string(m[1])
	script, err := os.ReadFile(filepath.Join(root, "scripts", "deploy.sh"))
	if err != nil {
		return c, fmt.Errorf("read deploy.sh: %w", err)
	}
	if m = settingsRows.FindSubmatch(script); m == nil {
		return c, errors.New("deploy.sh: no FUNCTION_SETTINGS table")
	}
	for _, row := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		col := strings.Fields(row)
		if len(col) != 7 {
			return c, fmt.Errorf("FUNCTION_SETTINGS row %q: want name, entry point, memory, cpu, concurrency, timeout, max instances", row)
		}
		timeout, err := time.ParseDuration(col[5])
		if err != nil {
			return c, fmt.Errorf("FUNCTION_SETTINGS row %q: %w", row, err)
		}
		c.Settings[col[1]] = Function{Name: col[0], Memory: col[2], CPU: strings.TrimPrefix(col[3], "-"),
			Concurrency: atoi(col[4]), TimeoutSeconds: int(timeout.Seconds()), MaxInstances: atoi(col[6])}
	}
	return c, nil
}

// Expected is the deployment the code asks for with o: one function per entry point of
// functions.Triggers, with the name and settings of its FUNCTION_SETTINGS row (each within the
// platform's limits), go.mod's runtime, the topics the triggers use, the scheduler ticking
// RollupScheduled's topic, and the field settings of the collections the variables name.
func (c Code) Expected(o Options) (Deployment, error) {
	schema := shared.DefaultConfig().Schema
	schema.Counters = cmp.Or(o.Env[shared.EnvCountersCollection], schema.Counters)
	schema.Rollups = cmp.Or(o.Env[shared.EnvRollupsCollection], schema.Rollups)
	schema.Dedupe = cmp.Or(o.Env[shared.EnvDedupeCollection], schema.Dedupe)
	database := cmp.Or(o.Database, shared.DefaultConfig().Database)
	env := map[string]string{shared.EnvProject: o.Project, shared.EnvDatabase: database}
	maps.Copy(env, o.Env)

	want := newDeployment("the code")
	topics := map[string]bool{}
	for _, t := range functions.Triggers(schema) {
		f, ok := c.Settings[t.EntryPoint]
		if !ok {
			return want, fmt.Errorf("FUNCTION_SETTINGS has no row for entry point %s", t.EntryPoint)
		}
		f.EntryPoint, f.Runtime, f.Env = t.EntryPoint, c.Runtime, env
		f.EventType, f.Topic, f.DocumentPattern, f.Retry = t.EventType, t.Topic, t.DocumentPattern, t.Retry
		f.Public = o.PublicIncrements && t.EntryPoint == functions.EntryIncrement
		if t.EventType != "" {
			f.TriggerLocation = o.Region
		}
		if t.DocumentPattern != "" { // a Firestore trigger lives where the database is
			f.Database, f.TriggerLocation = database, cmp.Or(o.DatabaseLocation, o.Region)
		}
		if t.DeadLetterTopic != "" {
			want.DeadLetters[f.Name] = DeadLetter{t.DeadLetterTopic, cmp.Or(o.MaxDeliveryAttempts, DefaultMaxDeliveryAttempts)}
			want.SubscribedTopics = append(want.SubscribedTopics, t.DeadLetterTopic) // keeps what is parked
		}
		for _, topic := range []string{t.Topic, t.DeadLetterTopic} {
			if topic != "" {
				topics[topic] = true
			}
		}
		if problems := platformProblems(f); len(problems) > 0 {
			return want, fmt.Errorf("FUNCTION_SETTINGS %s: %s", f.Name, strings.Join(problems, "; "))
		}
		want.Functions[t.EntryPoint] = f
	}
	if len(c.Settings) != len(want.Functions) {
		return want, fmt.Errorf("FUNCTION_SETTINGS has rows for %v, the code registers %v", slices.Sorted(maps.Keys(c.Settings)), slices.Sorted(maps.Keys(want.Functions)))
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
// property. A function's environment must hold every variable of want's, with its value, and only
// variables the code reads: a deployment may also set one to what the code would take anyway, as
// Terraform does with the collection names.
func (c Code) Diff(want, got Deployment) []string {
	var problems []string
	differ := func(what string, g, w any) {
		if gs, ws := fmt.Sprintf("%+v", g), fmt.Sprintf("%+v", w); gs != ws {
			problems = append(problems, fmt.Sprintf("%s: %s is %s, want %s", got.Source, what, gs, ws))
		}
	}
	entries := maps.Clone(want.Functions)
	maps.Copy(entries, got.Functions)
	for _, entry := range slices.Sorted(maps.Keys(entries)) {
		w, inCode := want.Functions[entry]
		g, deployed := got.Functions[entry]
		switch {
		case !deployed:
			problems = append(problems, fmt.Sprintf("%s: does not deploy entry point %s", got.Source, entry))
			continue
		case !inCode:
			problems = append(problems, fmt.Sprintf("%s: deploys entry point %q, which the code does not register (functions.Triggers)", got.Source, entry))
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
			if !c.Env[name] {
				problems = append(problems, fmt.Sprintf("%s: %s sets %s, which the code does not read (shared.ParseConfig)", got.Source, entry, name))
			}
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

// platformProblems lists the settings of f that Cloud Functions (2nd gen) refuses or that leave a
// limit to the platform's default.
func platformProblems(f Function) []string {
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

// atoi is strconv.Atoi with 0 for what is not a number: Diff then says the setting is missing.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
