package deploycheck_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/testenv"
)

// scriptOptions are the option combinations deploy.sh documents (--help), each on top of
// --project p --region r.
var scriptOptions = [][]string{
	{},
	{"--database-location", "nam5"},
	{"--database", "counts", "--database-location", "eur3"},
	{"--invoker", "serviceAccount:backend@p.iam.gserviceaccount.com", "--invoker", "user:ops@example.com"},
	{"--admin-invoker", "user:ops@example.com", "--invoker", "serviceAccount:backend@p.iam.gserviceaccount.com"},
	{"--allow-unauthenticated-increments"},
	{"--allow-unauthenticated-increments", "--env", "REQUIRE_APP_CHECK=true", "--env", "APP_CHECK_REPLAY_PROTECTION=true",
		"--env", "COUNTER_ID_PATTERN=post-[0-9]+"},
	{"--env", "COUNTERS_COLLECTION=tally", "--env", "ROLLUPS_COLLECTION=totals", "--env", "DEDUPE_COLLECTION=counter_seen",
		"--env", "MAX_DELTA=100", "--env", "ROLLUP_INTERVAL=2s"},
	{"--allow-unauthenticated-increments", "--env", "REQUIRE_ID_TOKEN=true",
		"--env", "ALLOWED_ORIGINS=https://app.example.com https://www.example.com http://localhost:5173"},
	{"--allow-unauthenticated-increments", "--env", "COUNTER_ID_PATTERN=post-[0-9]{1,12}", "--env", "MAX_DELTA=1"},
	{"--max-delivery-attempts", "20"},
	{"--dead-letter-only"},
	{"--opt-in", "fold-extension-shards"},
	{"--page-channel", "projects/p/notificationChannels/123", "--ticket-channel", "projects/p/notificationChannels/456", "--alert-threshold", "rollup_age=30"},
	{"--database", "counts", "--replace-rules", filepath.Join(root, "firestore.rules")},
	{"--remove"},
	{"--remove", "--database", "counts", "--env", "COUNTERS_COLLECTION=tally", "--env", "ROLLUPS_COLLECTION=totals",
		"--env", "DEDUPE_COLLECTION=counter_seen", "--replace-rules", filepath.Join(root, "web", "test", "notes-app.rules")},
}

// TestGcloudParsesEveryCommand runs every command deploy.sh can print (every documented option
// combination, identical lines once) and every gcloud command of README.md, CHANGELOG.md (its upgrade
// steps) and docs/*.md through the installed gcloud's own parser: one that gcloud refuses with a usage error fails the test.
func TestGcloudParsesEveryCommand(t *testing.T) {
	t.Parallel() // both mostly wait for other processes
	requireGcloud(t)
	seen := map[string]bool{}
	var commands [][]string
	add := func(words []string) {
		if key := strings.Join(words, "\x00"); !seen[key] && words[0] == "gcloud" {
			seen[key] = true
			commands = append(commands, words)
		}
	}
	for _, options := range scriptOptions {
		printed, err := deploycheck.DryRun(script, append([]string{"--project", "p", "--region", "r"}, options...)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, words := range printed {
			add(words)
		}
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	fromDocs, skipped := 0, 0
	for _, file := range append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}, docs...) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		found, left := deploycheck.MarkdownGcloudCommands(string(text))
		for _, words := range found {
			add(words)
		}
		fromDocs, skipped = fromDocs+len(found), skipped+left
	}
	if fromDocs == 0 {
		t.Error("README.md, CHANGELOG.md and docs/*.md: no gcloud command found in their code blocks")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	refused, err := deploycheck.GcloudParses(ctx, commands)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refused {
		t.Error(r)
	}
	t.Logf("gcloud parsed %d distinct commands (%d from the Markdown files; %d of their lines use the shell and were left out)",
		len(commands), fromDocs, skipped)
}

// requireBash skips the test under -short, and fails it when bash, which runs deploy.sh, is not
// installed.
func requireBash(t *testing.T) {
	t.Helper()
	testenv.RequireTool(t, "bash", "deploy.sh is a bash script (Debian package bash)")
}

// requireGcloud skips the test under -short, and fails it when the Google Cloud CLI, whose parser
// and ignore rules the checks use, is not installed.
func requireGcloud(t *testing.T) {
	t.Helper()
	testenv.RequireTool(t, "gcloud", "install the Google Cloud CLI (the emulators of `make test` need it too)")
}

// TestEnvValuesReachGcloudWhole: every --env value, commas and gcloud's other delimiters in it
// included (the documented COUNTER_ID_PATTERN post-[0-9]{1,12} has a comma), reaches every deployed
// function whole, as the installed gcloud's own parser reads --set-env-vars.
func TestEnvValuesReachGcloudWhole(t *testing.T) {
	requireGcloud(t)
	for _, pattern := range []string{"post-[0-9]{1,12}", "[a-z@|~,;#%]{1,3}"} {
		commands, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--env", "COUNTER_ID_PATTERN="+pattern,
			"--env", "ALLOWED_ORIGINS=https://a.example.com http://localhost:5173")
		if err != nil {
			t.Fatal(err)
		}
		var values []string
		for _, words := range commands {
			if strings.HasPrefix(strings.Join(words, " "), "gcloud functions deploy ") {
				values = append(values, flags(words)["--set-env-vars"]...)
			}
		}
		if len(values) == 0 {
			t.Fatal("no gcloud functions deploy --set-env-vars in the dry run")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		dicts, err := deploycheck.GcloudDicts(ctx, values)
		if err != nil {
			t.Fatal(err)
		}
		for i, env := range dicts {
			if env["COUNTER_ID_PATTERN"] != pattern || env["ALLOWED_ORIGINS"] != "https://a.example.com http://localhost:5173" ||
				env["GOOGLE_CLOUD_PROJECT"] != "p" {
				t.Errorf("--set-env-vars=%s: gcloud reads %v", values[i], env)
			}
		}
	}
}
