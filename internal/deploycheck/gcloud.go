package deploycheck

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/shellwords"
)

// DryRun runs the deploy.sh at script with --dry-run and args, its defaults from the environment
// cleared, and returns what the commands it prints deploy, and the commands (as words).
func DryRun(script string, args ...string) (Deployment, [][]string, error) {
	d := newDeployment("deploy.sh --dry-run")
	cmd := exec.Command("bash", append([]string{script, "--dry-run"}, args...)...)
	cmd.Env = append(os.Environ(), "GOOGLE_CLOUD_PROJECT=", "GOOGLE_CLOUD_REGION=", "FIRESTORE_DATABASE=", "FIRESTORE_LOCATION=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	listing, err := cmd.Output()
	if err != nil {
		return d, nil, fmt.Errorf("deploy.sh --dry-run %s: %w\n%s", shellwords.Join(args), err, stderr.String())
	}
	commands, err := Commands(string(listing))
	if err != nil {
		return d, nil, err
	}
	err = d.read(commands) // before the return, which copies d
	return d, commands, err
}

// read records what the commands of a dry run deploy; it skips those the checks do not compare.
func (d *Deployment) read(commands [][]string) error {
	var triggerOf string // the function whose trigger the last describe looked up
	for _, words := range commands {
		var err error
		args, flags := splitFlags(words)
		field := func() string { return flags.last("--collection-group") + "." + args[len(args)-1] }
		switch prefix := strings.Join(args[:min(len(args), 4)], " "); {
		case strings.HasPrefix(prefix, "gcloud functions deploy "):
			var f Function
			if f, err = functionFromFlags(args[3], flags); err == nil {
				err = d.add(f)
			}
		case strings.HasPrefix(prefix, "gcloud pubsub topics create"):
			d.Topics = append(d.Topics, args[len(args)-1])
		case strings.HasPrefix(prefix, "gcloud pubsub subscriptions create"):
			d.SubscribedTopics = append(d.SubscribedTopics, flags.last("--topic"))
		case strings.HasPrefix(prefix, "gcloud functions describe ") && strings.Contains(flags.last("--format"), "eventTrigger.trigger"):
			triggerOf = args[3]
		case strings.HasPrefix(prefix, "gcloud pubsub subscriptions update") && flags.has("--dead-letter-topic"):
			_, topic, _ := strings.Cut(flags.last("--dead-letter-topic"), "/topics/")
			d.DeadLetters[triggerOf] = DeadLetter{Topic: topic, MaxDeliveryAttempts: atoi(flags.last("--max-delivery-attempts"))}
		case strings.HasPrefix(prefix, "gcloud scheduler jobs"):
			d.SchedulerTopics = append(d.SchedulerTopics, flags.last("--topic"))
		case strings.HasPrefix(prefix, "gcloud firestore fields ttls") && flags.has("--enable-ttl"):
			d.TTLFields = append(d.TTLFields, field())
		case strings.HasPrefix(prefix, "gcloud firestore indexes fields") && flags.has("--disable-indexes"):
			d.UnindexedFields = append(d.UnindexedFields, field())
		case strings.HasPrefix(prefix, "gcloud firestore indexes fields") && slices.Equal(flags["--index"], []string{"order=ascending"}):
			d.AscendingIndexFields = append(d.AscendingIndexFields, field())
		}
		if err != nil {
			return fmt.Errorf("%s: %w", shellwords.Join(words), err)
		}
	}
	return nil
}

// functionFromFlags reads one gcloud functions deploy command. A setting it cannot read stays empty,
// for Diff to report.
func functionFromFlags(name string, flags flagSet) (Function, error) {
	timeout, _ := time.ParseDuration(flags.last("--timeout"))
	f := Function{
		Name: name, EntryPoint: flags.last("--entry-point"), Runtime: flags.last("--runtime"),
		Topic: flags.last("--trigger-topic"), Retry: flags.has("--retry"), Public: flags.has("--allow-unauthenticated"),
		Memory: flags.last("--memory"), CPU: flags.last("--cpu"), Concurrency: atoi(flags.last("--concurrency")),
		TimeoutSeconds: int(timeout.Seconds()), MaxInstances: atoi(flags.last("--max-instances")),
		Env: map[string]string{},
	}
	if f.Topic != "" {
		f.EventType = functions.EventPubSubMessagePublished
	}
	for _, filter := range append(flags["--trigger-event-filters"], flags["--trigger-event-filters-path-pattern"]...) {
		switch attr, value, _ := strings.Cut(filter, "="); attr {
		case "type":
			f.EventType = value
		case "database":
			f.Database = value
		case "document":
			f.DocumentPattern = value
		}
	}
	if !flags.has("--gen2") || flags.last("--source") != "." || flags.has("--trigger-http") == (f.EventType != "") {
		return f, fmt.Errorf("want --gen2 --source=. and exactly one of --trigger-http or an event trigger")
	}
	if f.EventType != "" { // gcloud puts an event trigger in the function's region unless told
		f.TriggerLocation = cmp.Or(flags.last("--trigger-location"), flags.last("--region"))
	}
	for pair := range strings.SplitSeq(flags.last("--set-env-vars"), ",") {
		if k, v, ok := strings.Cut(pair, "="); ok {
			f.Env[k] = v
		}
	}
	return f, nil
}

// flagSet maps a --flag to its values, in order; a flag without a value maps to [""].
type flagSet map[string][]string

func (f flagSet) has(name string) bool { _, ok := f[name]; return ok }

func (f flagSet) last(name string) string {
	if v := f[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// splitFlags separates positional arguments from --flag=value and --flag words.
func splitFlags(words []string) ([]string, flagSet) {
	var args []string
	flags := flagSet{}
	for _, w := range words {
		if !strings.HasPrefix(w, "-") {
			args = append(args, w)
			continue
		}
		name, value, _ := strings.Cut(w, "=")
		flags[name] = append(flags[name], value)
	}
	return args, flags
}
