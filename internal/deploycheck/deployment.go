// Package deploycheck checks the two deployments of the system, the gcloud commands that
// scripts/deploy.sh --dry-run prints and the Terraform module in terraform/, offline:
//   - against the code and each other: both are read into one model (Deployment) and compared with
//     the trigger table (functions.Triggers), the runtime go.mod asks for and the environment
//     variables shared/ reads (Check), and with each other's per-function settings;
//   - with the real tools: the installed gcloud parses every command (GcloudParses), the files each
//     path uploads are built as the buildpack builds them (GcloudUpload, ArchiveUpload, BuildUpload),
//     and the module is checked against the real providers' schema (CheckModuleSchema).
package deploycheck

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/shared"
)

// Function is one deployed function as a deployment describes it.
type Function struct {
	// Name is the deployed function's name.
	Name string
	// EntryPoint is the registered name it runs.
	EntryPoint string
	// Runtime is the Cloud Functions runtime, e.g. go126.
	Runtime string
	// EventType is the CloudEvent type of its trigger, "" for HTTP.
	EventType string
	// Topic is the Pub/Sub topic of a messagePublished trigger.
	Topic string
	// DocumentPattern and Database are the filters of a Firestore trigger.
	DocumentPattern, Database string
	// TriggerLocation is where the Eventarc trigger lives.
	TriggerLocation string
	// Retry says whether failed events are redelivered.
	Retry bool
	// Public says whether allUsers may invoke it.
	Public bool
	// Env is the environment it is deployed with.
	Env map[string]string
	// Settings are its memory, CPU and limits.
	Settings Settings
}

// Settings are one function's deploy settings: the FUNCTION_SETTINGS table of scripts/deploy.sh and
// var.function_settings of the Terraform module.
type Settings struct {
	// Memory is e.g. 256Mi.
	Memory string
	// CPU is the vCPU count, "" for the platform's default for the memory.
	CPU string
	// Concurrency is the most requests one instance serves at once.
	Concurrency int
	// TimeoutSeconds bounds one request or event.
	TimeoutSeconds int
	// MaxInstances is the most instances the function scales out to.
	MaxInstances int
}

// DeadLetter is a dead-letter policy.
type DeadLetter struct {
	// Topic is the dead-letter topic's short name.
	Topic string
	// MaxDeliveryAttempts is how many deliveries fail before a message is parked.
	MaxDeliveryAttempts int
}

// Deployment is what one deployment creates, in the terms the checks need.
type Deployment struct {
	// Source names the deployment in messages, e.g. "deploy.sh --dry-run".
	Source string
	// Functions lists every deployed function.
	Functions []Function
	// Topics lists the Pub/Sub topics it creates.
	Topics []string
	// SchedulerTopics lists the topics Cloud Scheduler jobs publish to.
	SchedulerTopics []string
	// TTLFields lists "collection.field" of every TTL policy.
	TTLFields []string
	// CollectionGroupIndexes lists "collection.field" of every collection-group single-field index.
	CollectionGroupIndexes []string
	// UnindexedFields lists "collection.field" of every field exempt from all indexing.
	UnindexedFields []string
	// SubscribedTopics lists the topics the deployment creates a subscription on.
	SubscribedTopics []string
	// DeadLetters maps a function's name to the dead-letter policy of its trigger's subscription.
	DeadLetters map[string]DeadLetter
	// LocalExec lists the commands (as words) a Terraform module runs on the machine that applies it.
	LocalExec [][]string
}

// Want is what the code says a deployment must be.
type Want struct {
	// Triggers is the code's trigger table, functions.Triggers(Schema).
	Triggers []functions.Trigger
	// Schema names the collections the deployment was configured with.
	Schema shared.Schema
	// Runtime is the runtime matching go.mod.
	Runtime string
	// Database and DatabaseLocation are the database the deployment targets.
	Database, DatabaseLocation string
	// Public lists the entry points that must be public; every other one must be private.
	Public []string
}

// Check lists every way d departs from w; none means they agree.
func Check(d Deployment, w Want) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, d.Source+": "+fmt.Sprintf(format, args...))
	}
	byEntry := map[string][]Function{}
	for _, f := range d.Functions {
		byEntry[f.EntryPoint] = append(byEntry[f.EntryPoint], f)
	}
	codeTopics := map[string]bool{}
	for _, t := range w.Triggers {
		for _, topic := range []string{t.Topic, t.DeadLetterTopic} {
			if topic != "" {
				codeTopics[topic] = true
			}
		}
		if t.DeadLetterTopic != "" && !slices.Contains(d.SubscribedTopics, t.DeadLetterTopic) {
			bad("no subscription keeps the messages parked in %s", t.DeadLetterTopic)
		}
		deployed := byEntry[t.EntryPoint]
		delete(byEntry, t.EntryPoint)
		if len(deployed) != 1 {
			bad("entry point %s is deployed %d times, want once", t.EntryPoint, len(deployed))
			continue
		}
		problems = append(problems, checkFunction(d.Source, deployed[0], d.DeadLetters[deployed[0].Name], t, w)...)
	}
	for entry := range byEntry {
		bad("entry point %q is deployed but the code has no such entry point (functions.Triggers)", entry)
	}
	for _, topic := range d.Topics {
		if !codeTopics[topic] {
			bad("creates topic %q, which no trigger of the code uses", topic)
		}
	}
	for topic := range codeTopics {
		if !slices.Contains(d.Topics, topic) {
			bad("does not create topic %q, which a trigger uses", topic)
		}
	}
	tick := topicOf(w.Triggers, functions.EntryRollupScheduled)
	if !slices.Equal(d.SchedulerTopics, []string{tick}) {
		bad("Cloud Scheduler publishes to %q, want exactly [%s] (the topic of %s)", d.SchedulerTopics, tick, functions.EntryRollupScheduled)
	}
	requireField := func(list []string, collection, field, what string) {
		if key := collection + "." + field; !slices.Contains(list, key) {
			bad("no %s on %s (has %q)", what, key, list)
		}
	}
	requireField(d.TTLFields, w.Schema.Dedupe, shared.FieldExpiresAt, "TTL policy")
	requireField(d.UnindexedFields, w.Schema.Dedupe, shared.FieldExpiresAt, "index exemption")
	requireField(d.UnindexedFields, w.Schema.Rollups, shared.FieldUpdatedAt, "index exemption")
	return problems
}

// checkFunction compares one deployed function with its trigger in the code.
func checkFunction(source string, f Function, deadLetter DeadLetter, t functions.Trigger, w Want) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s (%s): ", source, t.EntryPoint, f.Name)+fmt.Sprintf(format, args...))
	}
	differ := func(what string, got, want any) {
		if got != want {
			bad("%s is %v, the code says %v", what, got, want)
		}
	}
	differ("runtime", f.Runtime, w.Runtime)
	differ("event type", f.EventType, t.EventType)
	differ("topic", f.Topic, t.Topic)
	differ("document path pattern", f.DocumentPattern, t.DocumentPattern)
	differ("retry", f.Retry, t.Retry)
	differ("dead-letter topic", deadLetter.Topic, t.DeadLetterTopic)
	if t.DeadLetterTopic != "" && (deadLetter.MaxDeliveryAttempts < 5 || deadLetter.MaxDeliveryAttempts > 100) {
		bad("max delivery attempts %d: Pub/Sub allows 5 to 100", deadLetter.MaxDeliveryAttempts)
	}
	for _, p := range f.Settings.platformProblems(t.EventType != "") {
		bad("%s", p)
	}
	differ("public", f.Public, slices.Contains(w.Public, t.EntryPoint))
	if t.DocumentPattern != "" {
		differ("database filter", f.Database, w.Database)
		differ("trigger location", f.TriggerLocation, w.DatabaseLocation)
	}
	differ("FIRESTORE_DATABASE", f.Env[shared.EnvDatabase], w.Database)
	return problems
}

// platformProblems lists the settings Cloud Functions (2nd gen) refuses or that leave a limit unset.
func (s Settings) platformProblems(event bool) []string {
	var problems []string
	if s.Memory == "" {
		problems = append(problems, "no memory: gcloud refuses --cpu without --memory, and the compute estimate needs it")
	}
	if cpu, err := strconv.ParseFloat(cmp.Or(s.CPU, "0"), 64); err != nil || (s.Concurrency > 1 && cpu < 1) {
		problems = append(problems, fmt.Sprintf("concurrency %d with cpu %q: Cloud Run serves more than one request at a time only with at least 1 vCPU", s.Concurrency, s.CPU))
	}
	maxTimeout := 3600 // HTTP functions
	if event {
		maxTimeout = 540
	}
	if s.TimeoutSeconds < 1 || s.TimeoutSeconds > maxTimeout {
		problems = append(problems, fmt.Sprintf("timeout %ds: give one explicitly, 1 to %d s", s.TimeoutSeconds, maxTimeout))
	}
	if s.MaxInstances < 1 || s.Concurrency < 1 {
		problems = append(problems, fmt.Sprintf("max instances %d, concurrency %d: give both explicitly", s.MaxInstances, s.Concurrency))
	}
	return problems
}

// topicOf returns the topic of entry point's trigger.
func topicOf(triggers []functions.Trigger, entryPoint string) string {
	for _, t := range triggers {
		if t.EntryPoint == entryPoint {
			return t.Topic
		}
	}
	return ""
}

// EnvNames returns the environment variable names the code reads: the values of the string
// constants named Env* in the non-test Go files of dir (the shared package).
func EnvNames(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	names := map[string]string{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", file, err)
		}
		for _, decl := range parsed.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Env") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						names[id.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
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

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
