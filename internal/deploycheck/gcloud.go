package deploycheck

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardcount/counters/internal/shellwords"
)

// ParseDryRun reads what scripts/deploy.sh --dry-run prints: one shell command per line, "#" lines
// being comments.
func ParseDryRun(output string) (Deployment, error) {
	d := Deployment{Source: "deploy.sh --dry-run", DeadLetters: map[string]DeadLetter{}}
	commands, err := Commands(output)
	if err != nil {
		return Deployment{}, err
	}
	var triggerOf string // the function whose trigger the last describe looked up
	for _, words := range commands {
		if err := d.addCommand(words, &triggerOf); err != nil {
			return Deployment{}, fmt.Errorf("%s: %w", shellwords.Join(words), err)
		}
	}
	return d, nil
}

// addCommand records what one command creates; commands the checks do not need are ignored.
// triggerOf carries the function whose Eventarc trigger a describe command looked up to the
// subscription update that follows.
func (d *Deployment) addCommand(words []string, triggerOf *string) error {
	args, flags := splitFlags(words)
	field := func() string { return flags.last("--collection-group") + "." + args[len(args)-1] }
	switch prefix := strings.Join(args[:min(len(args), 4)], " "); {
	case strings.HasPrefix(prefix, "gcloud functions deploy "):
		f, err := functionFromFlags(args[3], flags)
		if err != nil {
			return err
		}
		d.Functions = append(d.Functions, f)
	case strings.HasPrefix(prefix, "gcloud pubsub topics create"):
		d.Topics = append(d.Topics, args[len(args)-1])
	case strings.HasPrefix(prefix, "gcloud pubsub subscriptions create"):
		d.SubscribedTopics = append(d.SubscribedTopics, flags.last("--topic"))
	case strings.HasPrefix(prefix, "gcloud functions describe ") && strings.Contains(flags.last("--format"), "eventTrigger.trigger"):
		*triggerOf = args[3]
	case strings.HasPrefix(prefix, "gcloud pubsub subscriptions update") && flags.has("--dead-letter-topic"):
		attempts, err := strconv.Atoi(flags.last("--max-delivery-attempts"))
		if err != nil || *triggerOf == "" {
			return fmt.Errorf("want --max-delivery-attempts=N, after a lookup of the function's trigger: %v", err)
		}
		_, topic, _ := strings.Cut(flags.last("--dead-letter-topic"), "/topics/")
		d.DeadLetters[*triggerOf] = DeadLetter{Topic: topic, MaxDeliveryAttempts: attempts}
	case strings.HasPrefix(prefix, "gcloud scheduler jobs"):
		d.SchedulerTopics = append(d.SchedulerTopics, flags.last("--topic"))
	case strings.HasPrefix(prefix, "gcloud firestore fields ttls") && flags.has("--enable-ttl"):
		d.TTLFields = append(d.TTLFields, field())
	case strings.HasPrefix(prefix, "gcloud firestore indexes fields") && flags.has("--disable-indexes"):
		d.UnindexedFields = append(d.UnindexedFields, field())
	}
	return nil
}

// functionFromFlags reads one gcloud functions deploy command.
func functionFromFlags(name string, flags flagSet) (Function, error) {
	timeout, err := time.ParseDuration(flags.last("--timeout"))
	if err != nil {
		return Function{}, fmt.Errorf("function %s: --timeout: %w", name, err)
	}
	f := Function{
		Settings: Settings{
			Memory: flags.last("--memory"), CPU: flags.last("--cpu"), TimeoutSeconds: int(timeout.Seconds()),
			Concurrency: atoi(flags.last("--concurrency")), MaxInstances: atoi(flags.last("--max-instances")),
		},
		Name:            name,
		EntryPoint:      flags.last("--entry-point"),
		Runtime:         flags.last("--runtime"),
		Topic:           flags.last("--trigger-topic"),
		TriggerLocation: flags.last("--trigger-location"),
		Retry:           flags.has("--retry"),
		Public:          flags.has("--allow-unauthenticated"),
		Env:             map[string]string{},
	}
	if !flags.has("--gen2") || flags.last("--source") != "." {
		return Function{}, fmt.Errorf("function %s: want --gen2 --source=.", name)
	}
	if f.Topic != "" {
		f.EventType = "google.cloud.pubsub.topic.v1.messagePublished"
	}
	for _, filter := range flags["--trigger-event-filters"] {
		attr, value, _ := strings.Cut(filter, "=")
		switch attr {
		case "type":
			f.EventType = value
		case "database":
			f.Database = value
		}
	}
	for _, filter := range flags["--trigger-event-filters-path-pattern"] {
		if attr, value, _ := strings.Cut(filter, "="); attr == "document" {
			f.DocumentPattern = value
		}
	}
	if flags.has("--trigger-http") == (f.EventType != "") {
		return Function{}, fmt.Errorf("function %s: want exactly one of --trigger-http or an event trigger", name)
	}
	if vars := flags.last("--set-env-vars"); vars != "" {
		for _, pair := range strings.Split(vars, ",") {
			k, v, _ := strings.Cut(pair, "=")
			f.Env[k] = v
		}
	}
	return f, nil
}

// atoi is strconv.Atoi with 0 for what is not a number: the checks then say the setting is missing.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
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

// flagsWithValue are the flags of the commands read here that take a separate value word.
var flagsWithValue = map[string]bool{"-X": true, "-H": true, "--data": true}

// splitFlags separates positional arguments from --flag=value and --flag words.
func splitFlags(words []string) ([]string, flagSet) {
	var args []string
	flags := flagSet{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			args = append(args, w)
			continue
		}
		name, value, _ := strings.Cut(w, "=")
		if flagsWithValue[name] && i+1 < len(words) {
			i++
			value = words[i]
		}
		flags[name] = append(flags[name], value)
	}
	return args, flags
}

// SplitWords splits one shell command line into words: blanks separate words, single quotes quote
// literally, a backslash outside quotes escapes the next character. Double quotes, variables and
// command substitutions are not expected in the dry-run listing and are refused.
func SplitWords(line string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			word.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(line):
			i++
			word.WriteByte(line[i])
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case strings.IndexByte("\"$`|;&<>", c) >= 0:
			return nil, fmt.Errorf("unexpected %q at column %d: not a plain command", c, i+1)
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated single quote")
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}
