package quickstart

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// readmeFunctionsHost is where the README's commands reach the functions (`make run`'s default).
const readmeFunctionsHost = "127.0.0.1:8080"

// varyingFields are answer fields whose values differ from run to run: only their presence and
// JSON type are compared.
var varyingFields = []string{"shard", "received_at", "updated_at"}

// varyingReadFields vary too in the answer of a read: the shard count it reports follows the
// counter's write rate (the roll-up grows it), which the quick start's burst may already raise.
var varyingReadFields = append(slices.Clip(varyingFields), "num_shards")

// readTimeout is how long a read (a GET) is repeated until its answer matches the README's: roll-ups
// and Pub/Sub deliveries are asynchronous.
const readTimeout = 60 * time.Second

// TestQuickStart runs the README's quick start, as written, against the stack `make test` starts, and
// checks every answer the README shows. Counter names and idempotency keys are made unique to the run
// (the stack's functions serve one project), and the README's address becomes the stack's.
func TestQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local stack: make build && bin/localstack exec -- go test -count=1 ./internal/quickstart/")
	}
	functionsURL := os.Getenv("LOCALSTACK_FUNCTIONS_URL")
	if functionsURL == "" || os.Getenv("PUBSUB_EMULATOR_HOST") == "" {
		t.Fatal("LOCALSTACK_FUNCTIONS_URL or PUBSUB_EMULATOR_HOST is not set: run with `make test`, or " +
			"make build && bin/localstack exec -- go test -count=1 ./internal/quickstart/")
	}
	steps, err := quickStartSteps(readRepoFile(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rename := uniqueNames(steps)
	for _, s := range steps {
		command := strings.ReplaceAll(rename(s.command), readmeFunctionsHost, strings.TrimPrefix(functionsURL, "http://"))
		want := rename(s.want)
		deadline, varying := time.Now(), varyingFields
		if isRead(command) {
			deadline, varying = deadline.Add(readTimeout), varyingReadFields
		}
		for {
			out, err := run(t, command)
			if err != nil {
				t.Fatalf("README.md line %d: %s\n%v\n%s", s.line, command, err, out)
			}
			mismatch := checkAnswer(out, want, varying)
			if mismatch == "" {
				t.Logf("%s\n%s", command, strings.TrimSpace(out))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("README.md line %d: %s\nanswered %s\nthe README shows %s\n%s", s.line, command,
					strings.TrimSpace(out), cmpOr(want, "(no answer: any JSON without an error)"), mismatch)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// cmpOr returns s, or def when s is empty.
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// run runs one command line with bash in the repository's root, in the test's environment.
func run(t *testing.T, command string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = repoRoot
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// isRead reports whether command is a curl GET, which may be repeated until its answer matches.
func isRead(command string) bool {
	return strings.HasPrefix(command, "curl ") && !strings.Contains(command, " -X ") && !strings.Contains(command, " -d ")
}

var (
	// counterName finds the counter IDs of the quick start's commands.
	counterName = regexp.MustCompile(`"counter":"([^"]+)"|counter=([A-Za-z0-9_-]+)|ARGS='[^']*?([A-Za-z0-9_-]+):[0-9]+'`)
	// keyName finds their idempotency keys.
	keyName = regexp.MustCompile(`Idempotency-Key: ([A-Za-z0-9_-]+)|-key ([A-Za-z0-9_-]+)`)
)

// uniqueNames returns a rewrite that gives every counter ID and idempotency key the steps use a
// suffix unique to this run, in commands and answers alike.
func uniqueNames(steps []step) func(string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	suffix := "_qs" + hex.EncodeToString(b) // "likes-…" would be the example declarations' (web/counter-sources.json)
	var names []string
	for _, s := range steps {
		for _, re := range []*regexp.Regexp{counterName, keyName} {
			for _, m := range re.FindAllStringSubmatch(s.command, -1) {
				for _, name := range m[1:] {
					if name != "" && !slices.Contains(names, name) {
						names = append(names, name)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		return func(s string) string { return s }
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	word := regexp.MustCompile(`\b(` + strings.Join(quoted, "|") + `)\b`)
	return func(s string) string { return word.ReplaceAllString(s, "${1}"+suffix) }
}

// checkAnswer compares a command's output with the answer the README shows, and says how they differ
// ("" when they agree). A curl command without an answer shown must still answer JSON without an error.
func checkAnswer(out, want string, varying []string) string {
	if want == "" {
		trimmed := strings.TrimSpace(out)
		if !strings.HasPrefix(trimmed, "{") {
			return "" // not an answer of the functions (make publish)
		}
		got, err := decodeObject(trimmed)
		if err != nil {
			return err.Error()
		}
		if _, failed := got["error"]; failed {
			return "the answer is an error"
		}
		return ""
	}
	got, err := decodeObject(strings.TrimSpace(out))
	if err != nil {
		return err.Error()
	}
	wantObj, err := decodeObject(want)
	if err != nil {
		return "the README's answer: " + err.Error()
	}
	return compare("", got, wantObj, varying)
}

// decodeObject decodes one JSON object, keeping numbers exact.
func decodeObject(s string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// compare says how got differs from want: the same fields, the same values except for the varying
// fields, whose JSON types only must agree.
func compare(path string, got, want any, varying []string) string {
	gotObj, gotIsObj := got.(map[string]any)
	wantObj, wantIsObj := want.(map[string]any)
	if gotIsObj && wantIsObj {
		for k := range wantObj {
			if _, ok := gotObj[k]; !ok {
				return fmt.Sprintf("field %s%s is missing", path, k)
			}
		}
		for k := range gotObj {
			if _, ok := wantObj[k]; !ok {
				return fmt.Sprintf("field %s%s is not in the README's answer", path, k)
			}
			if slices.Contains(varying, k) {
				if reflect.TypeOf(gotObj[k]) != reflect.TypeOf(wantObj[k]) {
					return fmt.Sprintf("field %s%s is %v, the README shows %v", path, k, gotObj[k], wantObj[k])
				}
				continue
			}
			if d := compare(path+k+".", gotObj[k], wantObj[k], varying); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("%s is %v, the README shows %v", strings.TrimSuffix(path, "."), got, want)
	}
	return ""
}
