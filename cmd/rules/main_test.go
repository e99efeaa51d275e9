package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardcount/counters/rules"
)

// TestRefusesAnAppThatOpensTheCountersPaths: make rules with an app ruleset whose catch-all allows
// signed-in users everything fails, names the file and line, and writes nothing.
func TestRefusesAnAppThatOpensTheCountersPaths(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.rules")
	out := filepath.Join(dir, "combined.rules")
	if err := os.WriteFile(app, []byte(`rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /{document=**} {
      allow read, write: if request.auth != null;
    }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"-app", app, "-o", out}, &stdout, &stderr); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if want := app + `:5: "allow read, write: if request.auth != null" in match /{document=**} also reaches /rollups/{counterId}`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want it to contain %q", stderr.String(), want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written (%v); a refusal writes nothing", out, err)
	}
}

// TestWritesTheCombinedFile: an app that keeps to its own collections gets the block, in place too.
func TestWritesTheCombinedFile(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "firestore.rules")
	src := "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n    match /notes/{id} { allow read: if true; }\n  }\n}\n"
	if err := os.WriteFile(app, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"-app", app, "-variant", "guide-clients", "-o", app}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}
	got, _ := os.ReadFile(app)
	want, _ := rules.Block("guide-clients")
	if !strings.HasPrefix(string(got), src[:len(src)-2]) || !strings.Contains(string(got), strings.SplitN(string(want), "\n", 2)[0]) {
		t.Errorf("combined file:\n%s", got)
	}
}

// TestNamesTheConfiguredCollections: with the collection settings in the environment, the block
// covers those collections, so an app that keeps its own "counters" and "rollups" open to its
// clients takes it; with the defaults the same app is refused.
func TestNamesTheConfiguredCollections(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "firestore.rules")
	src := "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n" +
		"    match /counters/{id} { allow read: if true; }\n    match /rollups/{id} { allow read: if true; }\n  }\n}\n"
	if err := os.WriteFile(app, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"-app", app}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "/counters/") {
		t.Errorf("default names: exit status %d, %s; want the app's counters refused", code, stderr.String())
	}
	t.Setenv("COUNTERS_COLLECTION", "like_counters")
	t.Setenv("ROLLUPS_COLLECTION", "like_rollups")
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"-app", app}, &stdout, &stderr); code != 0 {
		t.Fatalf("renamed: exit status %d: %s", code, stderr.String())
	}
	for _, want := range []string{"match /like_counters/{path=**}", "match /like_counters_sweep/{path=**}", "match /like_rollups/{counterId}", "match /tops/{listId}"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("renamed: no %q in\n%s", want, stdout.String())
		}
	}
	t.Setenv("ROLLUPS_COLLECTION", "like_counters")
	if code := run([]string{"-app", app}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "must differ") {
		t.Errorf("two collections of one name: exit status %d, %s; want it refused", code, stderr.String())
	}
}
