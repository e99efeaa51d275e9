package quickstart

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/functionsproc"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/rules"
)

// existingApp is the page these tests run the steps of.
const existingApp = "docs/existing-app.md"

// myApp is where the page's commands find the app's files, which the tests put in a folder of theirs.
const myApp = "../my-app/"

// existingAppCode returns the page's code lines (see deploycheck.MarkdownCode).
func existingAppCode(t *testing.T) []string {
	t.Helper()
	code, _ := deploycheck.MarkdownCode(readRepoFile(t, existingApp))
	return code
}

// linesStarting returns the lines of code that start with prefix; it fails t when there is none.
func linesStarting(t *testing.T, code []string, prefix string) []string {
	t.Helper()
	var lines []string
	for _, line := range code {
		if strings.HasPrefix(line, prefix) {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("%s: no code line starts with %q", existingApp, prefix)
	}
	return lines
}

// TestExistingAppRulesSteps: the page's example app rules are web/test/notes-app.rules (which the JS
// SDK test composes and loads into the emulator); each of the page's make rules lines adds the block
// to them, named as the line says, and leaves the app's text as it was; its REMOVE=1 line gives the
// app's file back byte for byte.
func TestExistingAppRulesSteps(t *testing.T) {
	page := readRepoFile(t, existingApp)
	example := readRepoFile(t, "web/test/notes-app.rules")
	_, after, ok := strings.Cut(page, "```rules\n")
	shown, _, ok2 := strings.Cut(after, "```\n")
	if !ok || !ok2 || shown != example {
		t.Fatalf("%s: its ```rules block is not web/test/notes-app.rules:\n%s", existingApp, shown)
	}
	testenv.RequireTool(t, "bash", "the page's commands are bash lines (Debian package bash)")
	testenv.RequireTool(t, "make", "the page's make rules lines need it (Debian package make)")
	dir := t.TempDir()
	appRules := filepath.Join(dir, "firestore.rules")
	var removes int
	for _, line := range linesStarting(t, existingAppCode(t), "make rules ") {
		command := strings.ReplaceAll(line, myApp, dir+"/")
		if strings.Contains(line, "REMOVE=1") {
			removes++
			composed := strings.ReplaceAll(strings.Replace(line, " REMOVE=1", "", 1), myApp, dir+"/")
			for _, c := range []string{"write", composed, command} {
				if c == "write" {
					if err := os.WriteFile(appRules, []byte(example), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if out, err := run(t, "make -s "+strings.TrimPrefix(c, "make ")); err != nil {
					t.Fatalf("%s: %v\n%s", c, err, out)
				}
			}
			if got, _ := os.ReadFile(appRules); string(got) != example {
				t.Errorf("%s: the app's rules are not back as they were:\n%s", line, got)
			}
			continue
		}
		if err := os.WriteFile(appRules, []byte(example), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := run(t, "make -s "+strings.TrimPrefix(command, "make ")); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		got, _ := os.ReadFile(appRules)
		rest, _, err := rules.Remove(got)
		if err != nil || string(rest) != example || !strings.Contains(string(got), rules.Marker) {
			t.Errorf("%s: want the app's rules with the block added (%v):\n%s", line, err, got)
		}
		counters := "counters"
		for _, word := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(word, "COUNTERS_COLLECTION="); ok {
				counters = v
			}
		}
		if !strings.Contains(string(got), "match /"+counters+"/{path=**}") {
			t.Errorf("%s: the block does not cover the collection %s:\n%s", line, counters, got)
		}
	}
	if removes == 0 {
		t.Errorf("%s: no make rules ... REMOVE=1 line", existingApp)
	}
}

// TestExistingAppIndexMerge runs the page's jq line on an app's index file: the result lists the
// app's indexes and field settings and ours (firestore.indexes.json), each once, also after a
// second run.
func TestExistingAppIndexMerge(t *testing.T) {
	testenv.RequireTool(t, "bash", "the page's commands are bash lines (Debian package bash)")
	testenv.RequireTool(t, "jq", "the page's index merge needs it (Debian package jq)")
	line := linesStarting(t, existingAppCode(t), "jq ")[0]
	dir := t.TempDir()
	appFile := filepath.Join(dir, "firestore.indexes.json")
	app := `{"indexes":[{"collectionGroup":"posts","queryScope":"COLLECTION","fields":[{"fieldPath":"author","order":"ASCENDING"},{"fieldPath":"at","order":"DESCENDING"}]}],` +
		`"fieldOverrides":[{"collectionGroup":"posts","fieldPath":"body","ttl":false,"indexes":[]}]}`
	if err := os.WriteFile(appFile, []byte(app), 0o644); err != nil {
		t.Fatal(err)
	}
	type file struct {
		Indexes, FieldOverrides []json.RawMessage
	}
	read := func(path string) (f file) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(data, &f)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return f
	}
	ours := read(filepath.Join(repoRoot, "firestore.indexes.json"))
	for range 2 {
		if out, err := run(t, strings.ReplaceAll(line, myApp, dir+"/")); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		merged := read(appFile)
		for what, want := range map[string]int{"indexes": 1 + len(ours.Indexes), "fieldOverrides": 1 + len(ours.FieldOverrides)} {
			got := merged.Indexes
			if what == "fieldOverrides" {
				got = merged.FieldOverrides
			}
			if len(got) != want {
				t.Errorf("merged %s: %d entries, want the app's and ours, once each (%d)", what, len(got), want)
			}
		}
	}
	if merged, _ := os.ReadFile(appFile); !bytes.Contains(merged, []byte(`"author"`)) || !bytes.Contains(merged, []byte(`"windows.day.count"`)) {
		t.Errorf("merged file lacks the app's index or ours:\n%s", merged)
	}
}

// TestExistingAppBrowserStep runs the page's browser step against a functions process of the local
// stack started with the ALLOWED_ORIGINS the page gives make run: each curl line's answer has the
// status and the headers shown under it, and lacks those shown as "no <header>".
func TestExistingAppBrowserStep(t *testing.T) {
	testenv.Stack(t)
	code := existingAppCode(t)
	start := linesStarting(t, code, "# in another terminal: ALLOWED_ORIGINS=")[0]
	setting, _, _ := strings.Cut(strings.TrimPrefix(start, "# in another terminal: "), " make run")
	origins, err := deploycheck.SplitWords(setting)
	if err != nil || len(origins) != 1 {
		t.Fatalf("%q: want one ALLOWED_ORIGINS=... word (%v)", setting, err)
	}
	functionsURL := functionsproc.Start(t, origins[0])
	i := slices.Index(code, start)
	checked := 0
	for n := i + 1; n < len(code); n++ {
		line := code[n]
		if !strings.HasPrefix(line, "curl ") {
			if line != "" && !strings.HasPrefix(line, "#") {
				break
			}
			continue
		}
		out, err := run(t, strings.ReplaceAll(line, readmeFunctionsHost, strings.TrimPrefix(functionsURL, "http://")))
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		answer := strings.ReplaceAll(out, "\r", "")
		for _, want := range code[n+1:] {
			want, ok := strings.CutPrefix(want, "# ")
			if !ok {
				break
			}
			checked++
			switch {
			case strings.HasPrefix(want, "HTTP/"):
				if status, _, _ := strings.Cut(answer, "\n"); status != want {
					t.Errorf("%s\nanswered %q, the page shows %q", line, status, want)
				}
			case strings.HasPrefix(want, "no "):
				if header := strings.TrimPrefix(want, "no "); headerValue(answer, header) != "" {
					t.Errorf("%s\nanswered %s: %s, the page shows none", line, header, headerValue(answer, header))
				}
			default:
				name, value, _ := strings.Cut(want, ": ")
				if got := headerValue(answer, name); got != value {
					t.Errorf("%s\nanswered %s: %q, the page shows %q", line, name, got, value)
				}
			}
		}
	}
	if checked < 4 {
		t.Errorf("%s: checked %d answer lines of the browser step, want its status and headers", existingApp, checked)
	}
}

// headerValue is the value of header name in an HTTP answer's header block, or "".
func headerValue(answer, name string) string {
	for _, line := range strings.Split(answer, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && strings.EqualFold(k, name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestExistingAppRemoveDataStep runs the page's removedata lines on a project of the emulator that
// holds the counters' documents and an app's: the dry run deletes nothing, the run deletes ours
// and none of the app's.
func TestExistingAppRemoveDataStep(t *testing.T) {
	ctx := context.Background()
	project := testenv.Project(t)
	client := testenv.FirestoreOf(t, project)
	ours := []string{"counters/post-42", "counters/post-42/shards/3", "counters/post-42/counter_members/u1",
		"counters_sweep/state", "rollups/post-42", "tops/g_all", "counter_dedupe/k1"}
	apps := []string{"notes/n1", "posts/p1", "posts/p1/shards/0", "posts/p1/counters/c1"}
	for _, path := range append(slices.Clone(ours), apps...) {
		if _, err := client.Doc(path).Create(ctx, map[string]any{"x": 1}); err != nil {
			t.Fatal(err)
		}
	}
	lines := linesStarting(t, existingAppCode(t), "GOOGLE_CLOUD_PROJECT=my-project go run ./cmd/removedata")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " -dry-run") {
		t.Fatalf("%s: want a removedata dry run, then the run: %q", existingApp, lines)
	}
	for i, line := range lines {
		command := strings.Replace(line, "my-project", project, 1)
		if out, err := run(t, "env -u COUNTERS_COLLECTION -u ROLLUPS_COLLECTION -u TOPS_COLLECTION -u DEDUPE_COLLECTION "+command); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		want := append(slices.Clone(ours), apps...)
		if i == 1 {
			want = slices.Clone(apps)
		}
		slices.Sort(want)
		left := testenv.DocumentPaths(t, client)
		slices.Sort(left)
		if !slices.Equal(left, want) {
			t.Errorf("after %s: %v, want %v", line, left, want)
		}
	}
}
