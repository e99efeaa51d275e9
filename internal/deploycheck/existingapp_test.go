package deploycheck_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/deploycheck"
)

// existingAppPage is the page that walks an app's team through adding and removing the counters.
var existingAppPage = filepath.Join(root, "docs", "existing-app.md")

// existingAppLines returns the page's code lines that start with prefix, as words.
func existingAppLines(t *testing.T, prefix string) [][]string {
	t.Helper()
	text, err := os.ReadFile(existingAppPage)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := deploycheck.MarkdownCode(string(text))
	var lines [][]string
	for _, line := range code {
		if strings.HasPrefix(line, prefix) {
			words, err := deploycheck.SplitWords(line)
			if err != nil {
				t.Fatalf("%s: %q: %v", existingAppPage, line, err)
			}
			lines = append(lines, words)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("%s: no code line starts with %q", existingAppPage, prefix)
	}
	return lines
}

// TestExistingAppDeployCommandsRun runs every scripts/deploy.sh command of docs/existing-app.md as a
// dry run (those without --dry-run too: their options must hold), the app's rules file being the
// page's example, and passes every gcloud command they print through the installed gcloud's parser.
// The deploy is the dry run without --dry-run, and the removal's dry run is there.
func TestExistingAppDeployCommandsRun(t *testing.T) {
	requireBash(t)
	appRules := filepath.Join(root, "web", "test", "notes-app.rules") // the page's example (internal/quickstart checks)
	var commands [][]string
	var dryRuns, runs []string
	for _, words := range existingAppLines(t, "scripts/deploy.sh ") {
		args := slices.DeleteFunc(slices.Clone(words[1:]), func(w string) bool { return w == "--dry-run" })
		for i, w := range args {
			if w == "../my-app/firestore.rules" {
				args[i] = appRules
			}
		}
		printed, err := deploycheck.DryRun(script, args...)
		if err != nil {
			t.Errorf("%s: %v", strings.Join(words, " "), err)
			continue
		}
		commands = append(commands, printed...)
		if slices.Contains(words, "--dry-run") {
			dryRuns = append(dryRuns, strings.Join(args, " "))
		} else {
			runs = append(runs, strings.Join(args, " "))
		}
	}
	for _, run := range runs {
		if !slices.Contains(dryRuns, run) && !strings.Contains(run, "--remove") {
			t.Errorf("the page runs deploy.sh %s without showing its dry run first", run)
		}
	}
	if !slices.ContainsFunc(dryRuns, func(r string) bool { return strings.HasPrefix(r, "--remove ") }) {
		t.Error("the page shows no dry run of --remove")
	}
	if testing.Short() {
		return
	}
	requireGcloud(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gcloud := slices.DeleteFunc(commands, func(words []string) bool { return words[0] != "gcloud" })
	refused, err := deploycheck.GcloudParses(ctx, gcloud)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refused {
		t.Error(r)
	}
}

// TestExistingAppTerraformNamesExist: every -var of docs/existing-app.md's terraform commands is a
// variable of the module, every key of its environment a setting the module lets it set, and every
// address its terraform state commands name a resource of the module.
func TestExistingAppTerraformNamesExist(t *testing.T) {
	var module strings.Builder
	files, err := filepath.Glob(filepath.Join(root, "terraform", "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		module.Write(data)
	}
	variables := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^variable "(\w+)"`).FindAllStringSubmatch(module.String(), -1) {
		variables[m[1]] = true
	}
	settings := map[string]bool{}
	for _, s := range config.Settings() {
		settings[s.Name] = true
	}
	for name := range settings {
		if strings.HasSuffix(name, "_COLLECTION") {
			delete(settings, name) // the module sets them from variables of their own
		}
	}
	checked := 0
	for _, words := range existingAppLines(t, "terraform ") {
		for i, w := range words {
			if w == "-var" && i+1 < len(words) {
				name, value, _ := strings.Cut(words[i+1], "=")
				checked++
				if !variables[name] {
					t.Errorf("%s: -var %s: the module has no such variable", strings.Join(words[:2], " "), name)
				}
				if name == "environment" {
					for _, m := range regexp.MustCompile(`(\w+)=`).FindAllStringSubmatch(value, -1) {
						if !settings[m[1]] {
							t.Errorf("environment %s: not a setting the module lets environment set", m[1])
						}
					}
				}
			}
		}
		if len(words) > 2 && words[1] == "state" {
			for _, address := range words[3:] {
				typ, name, _ := strings.Cut(strings.Split(address, "[")[0], ".")
				if !strings.Contains(module.String(), `resource "`+typ+`" "`+name+`"`) {
					t.Errorf("terraform state %s %s: the module has no such resource", words[2], address)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("docs/existing-app.md: no -var found in its terraform commands")
	}
}

// TestExistingAppListsWhatTheDeployCreates: the page's "Creates" list names every function, topic,
// subscription, scheduler job, service account and repository that the deploy (with every opt-in
// function) creates, and nothing else of that kind.
func TestExistingAppListsWhatTheDeployCreates(t *testing.T) {
	requireBash(t)
	useSources(t, "[]") // one function per declared pattern, named after it
	text, err := os.ReadFile(existingAppPage)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(text), "**Creates**")
	section, _, ok2 := strings.Cut(section, "**Sets, in the database**")
	if !ok || !ok2 {
		t.Fatalf("%s: no **Creates** list followed by **Sets, in the database**", existingAppPage)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z][a-z0-9-]*)`").FindAllStringSubmatch(section, -1) {
		if !strings.HasPrefix(m[1], "my-project") { // Terraform's source bucket, named after the project
			listed[m[1]] = true
		}
	}
	printed, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--opt-in", "fold-extension-shards")
	if err != nil {
		t.Fatal(err)
	}
	creates := regexp.MustCompile(`^gcloud (?:functions deploy|pubsub topics create|pubsub subscriptions create|scheduler jobs create pubsub|iam service-accounts create|artifacts repositories create) ([a-z][a-z0-9-]*)`)
	created := map[string]bool{}
	for _, words := range printed {
		if m := creates.FindStringSubmatch(strings.Join(words, " ")); m != nil {
			created[m[1]] = true
		}
	}
	if len(created) == 0 {
		t.Fatal("the dry run printed no creation: the pattern no longer matches deploy.sh's commands")
	}
	for name := range created {
		if !listed[name] {
			t.Errorf("%s: the deploy creates %s, which the Creates list does not name", existingAppPage, name)
		}
	}
	for name := range listed {
		if !created[name] {
			t.Errorf("%s: the Creates list names %s, which the deploy does not create", existingAppPage, name)
		}
	}
}
