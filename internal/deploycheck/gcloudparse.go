package deploycheck

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/shardcount/counters/internal/shellwords"
)

// noAccount is what gcloud says once a command's arguments have parsed and it needs credentials.
const noAccount = "You do not currently have an active account selected"

//go:embed gcloud_batch.py
var gcloudBatch string

// GcloudParses runs each command (words, the first "gcloud") through the installed gcloud with no
// account, and returns one problem per command refused before gcloud asks for credentials.
// Nothing reaches Google. Commands run in one batch process; refused ones are rerun alone.
func GcloudParses(ctx context.Context, commands [][]string) ([]string, error) {
	tmp, err := os.MkdirTemp("", "gcloud-parse-")
	if err != nil {
		return nil, fmt.Errorf("gcloud temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	config, work := filepath.Join(tmp, "config"), filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return nil, fmt.Errorf("gcloud work dir: %w", err)
	}
	env := append(os.Environ(), "CLOUDSDK_CONFIG="+config, "CLOUDSDK_CORE_DISABLE_PROMPTS=1",
		"CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1", "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1")
	args := make([][]string, len(commands))
	for i, words := range commands {
		args[i] = words[1:]
	}
	results, err := runSDKPython[gcloudResult](ctx, env, work, gcloudBatch, args)
	if err != nil {
		return nil, fmt.Errorf("gcloud batch: %w", err)
	}
	var refused []string
	for i, words := range commands {
		if results[i].parsed() {
			continue
		}
		cmd := exec.CommandContext(ctx, "gcloud", words[1:]...)
		cmd.Env, cmd.Dir = env, work
		out, err := cmd.CombinedOutput()
		if r := (gcloudResult{Out: string(out), Code: cmd.ProcessState.ExitCode()}); err != nil && !r.parsed() {
			refused = append(refused, fmt.Sprintf("gcloud refuses %s\n%s", shellwords.Join(words), firstLines(r.Out, 4)))
		}
	}
	return refused, ctx.Err()
}

// gcloudResult is what one gcloud command wrote and its exit status.
type gcloudResult struct {
	Out  string
	Code int
}

// parsed says gcloud asked for an account or succeeded.
func (r gcloudResult) parsed() bool {
	return r.Code == 0 || strings.Contains(r.Out, noAccount)
}

// runSDKPython runs script in dir on the Python that the installed gcloud's launcher runs, with
// GCLOUD_LIB set to the SDK's lib folder, env (nil: this process's) and input as JSON on stdin, and
// decodes the JSON value it prints for each item of input.
func runSDKPython[Out, In any](ctx context.Context, env []string, dir, script string, input []In) ([]Out, error) {
	launcher, err := exec.LookPath("gcloud")
	if err == nil {
		launcher, err = filepath.EvalSymlinks(launcher)
	}
	if err != nil {
		return nil, fmt.Errorf("the gcloud launcher: %w", err)
	}
	sdk := filepath.Dir(filepath.Dir(launcher)) // SDK/bin/gcloud
	python := filepath.Join(sdk, "platform", "bundledpythonunix", "bin", "python3")
	if _, err := os.Stat(python); err != nil {
		python = "python3" // what the launcher falls back to
	}
	data, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	if env == nil {
		env = os.Environ()
	}
	cmd := exec.CommandContext(ctx, python, "-c", script)
	cmd.Env = append(env, "GCLOUD_LIB="+filepath.Join(sdk, "lib"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(data)
	var errs bytes.Buffer
	cmd.Stderr = &errs
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s (SDK %s): %w\n%s", python, sdk, err, firstLines(errs.String(), 10))
	}
	var values []Out
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var v Out
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s output %q: %w", python, firstLines(string(out), 4), err)
		}
		values = append(values, v)
	}
	if len(values) != len(input) {
		return nil, fmt.Errorf("%s answered %d of %d\n%s", python, len(values), len(input), firstLines(errs.String(), 10))
	}
	return values, nil
}

// gcloudDictScript decodes each value of a JSON list on stdin with the SDK's ArgDict and prints it.
const gcloudDictScript = `import json, os, sys
root = os.environ["GCLOUD_LIB"]
sys.path.insert(0, root)
sys.path.insert(0, os.path.join(root, "third_party"))
import gcloud
gcloud._fix_google_module()
sys.path = gcloud.reorder_sys_path(sys.path)
from googlecloudsdk.calliope import arg_parsers
for v in json.load(sys.stdin):
    print(json.dumps(arg_parsers.ArgDict()(v)))
`

// GcloudDicts decodes values of dictionary flags (e.g. --set-env-vars) as the installed gcloud does.
func GcloudDicts(ctx context.Context, values []string) ([]map[string]string, error) {
	dicts, err := runSDKPython[map[string]string](ctx, nil, "", gcloudDictScript, values)
	if err != nil {
		return nil, fmt.Errorf("gcloud ArgDict: %w", err)
	}
	return dicts, nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// DryRun runs deploy.sh --dry-run args with its environment defaults cleared, and returns the
// commands it prints.
func DryRun(script string, args ...string) ([][]string, error) {
	cmd := exec.Command("bash", append([]string{script, "--dry-run"}, args...)...)
	cmd.Env = append(os.Environ(), "GOOGLE_CLOUD_PROJECT=", "GOOGLE_CLOUD_REGION=", "FIRESTORE_DATABASE=", "FIRESTORE_LOCATION=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	listing, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("deploy.sh --dry-run %s: %w\n%s", shellwords.Join(args), err, stderr.String())
	}
	var commands [][]string // one a line, but for comments and blank lines
	for n, line := range strings.Split(string(listing), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words, err := SplitWords(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		commands = append(commands, words)
	}
	return commands, nil
}

// inlineGcloud matches a gcloud command in a Markdown code span.
var inlineGcloud = regexp.MustCompile("`(gcloud [^`]+)`")

// MarkdownGcloudCommands returns the gcloud commands of markdown's code blocks and spans, and
// how many it skipped for using the shell.
func MarkdownGcloudCommands(markdown string) (commands [][]string, skipped int) {
	add := func(line string) {
		if words, err := SplitWords(strings.TrimSpace(line)); err == nil {
			commands = append(commands, words)
		} else {
			skipped++
		}
	}
	code, prose := MarkdownCode(markdown)
	for _, line := range code {
		if c, _, _ := strings.Cut(line, " #"); strings.HasPrefix(c, "gcloud ") {
			add(c)
		}
	}
	for _, line := range prose {
		for _, m := range inlineGcloud.FindAllStringSubmatch(line, -1) {
			add(m[1])
		}
	}
	return commands, skipped
}

// MarkdownCode splits markdown into its fenced code lines (trimmed, continuations joined) and prose.
func MarkdownCode(markdown string) (code, prose []string) {
	inFence := false
	var pending string
	for _, line := range strings.Split(markdown, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inFence, pending = !inFence, ""
			continue
		case !inFence:
			prose = append(prose, line)
			continue
		}
		if pending != "" {
			trimmed = pending + " " + trimmed
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			pending = strings.TrimSpace(cont)
			continue
		}
		pending = ""
		code = append(code, trimmed)
	}
	return code, prose
}

// SplitWords splits a command line into words, honouring single quotes and backslashes; it
// refuses double quotes, variables and other shell syntax.
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
