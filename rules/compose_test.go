package rules

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/shared"
)

// notesApp is an app's ruleset: its own collection, readable and writable by its owner only, and
// nothing else.
const notesApp = `rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /notes/{noteId} {
      allow read, update, delete: if request.auth != null && request.auth.uid == resource.data.owner;
      allow create: if request.auth != null && request.auth.uid == request.resource.data.owner;
    }
    match /{document=**} {
      allow read, write: if false;
    }
  }
}
`

// foldsOf are the fold's patterns that go with a variant: the example's for extension-clients.
func foldsOf(variant string) []string {
	if variant == "extension-clients" {
		return ExampleFoldPatterns()
	}
	return nil
}

func block(t *testing.T, variant string) []byte {
	t.Helper()
	b, err := Block(variant)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestComposeAddsTheBlockAndKeepsTheApp: the app's text is kept byte for byte around the block,
// and composing the result again gives the same file (the old block is replaced, not doubled).
func TestComposeAddsTheBlockAndKeepsTheApp(t *testing.T) {
	for _, v := range Variants {
		combined, err := Compose([]byte(notesApp), block(t, v), v, foldsOf(v))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		begin, end := strings.Index(string(combined), Marker), strings.Index(string(combined), endMarker)
		if begin < 0 || end < begin {
			t.Fatalf("%s: no marked block in\n%s", v, combined)
		}
		end += len(endMarker) + 1
		lineStart := strings.LastIndexByte(string(combined[:begin]), '\n') + 1
		if rest := string(combined[:lineStart]) + string(combined[end:]); rest != notesApp {
			t.Errorf("%s: the app's rules changed around the block:\n%s", v, rest)
		}
		again, err := Compose(combined, block(t, v), v, foldsOf(v))
		if err != nil || string(again) != string(combined) {
			t.Errorf("%s: composing again: err %v, same %t", v, err, string(again) == string(combined))
		}
	}
}

// TestRemoveGivesBackTheAppsRules: removing the block from a composed file gives the app's rules
// byte for byte, and a file without a block is left as it is.
func TestRemoveGivesBackTheAppsRules(t *testing.T) {
	for _, v := range Variants {
		combined, err := Compose([]byte(notesApp), block(t, v), v, foldsOf(v))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		back, held, err := Remove(combined)
		if err != nil || !held || string(back) != notesApp {
			t.Errorf("%s: Remove = %t, %v:\n%s\nwant the app's rules:\n%s", v, held, err, back, notesApp)
		}
		again, held, err := Remove(back)
		if err != nil || held || string(again) != notesApp {
			t.Errorf("%s: Remove of a file without a block = %t, %v, changed %t", v, held, err, string(again) != notesApp)
		}
	}
}

// TestComposeRefusesAppRulesThatOpenOurPaths: an allow that is not literally false on a path the
// block covers is refused, naming its line; the app's own paths and closed catch-alls are not.
func TestComposeRefusesAppRulesThatOpenOurPaths(t *testing.T) {
	wrap := func(matches string) string {
		return "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n" + matches + "  }\n}\n"
	}
	for _, c := range []struct {
		name, variant, app string
		line               int // 0: accepted
	}{
		{"test-mode catch-all", "counters", wrap("    match /{document=**} {\n      allow read, write: if request.time < timestamp.date(2027, 1, 1);\n    }\n"), 5},
		{"signed-in catch-all", "counters", wrap("    match /{document=**} { allow read; }\n"), 4},
		{"counters opened", "counters", wrap("    match /notes/{id} { allow read: if true; }\n    match /counters/{id} {\n      allow read: if request.auth != null;\n    }\n"), 6},
		{"shards opened by a nested match", "guide-clients", wrap("    match /counters/{id} {\n      match /shards/{shard} {\n        allow write: if isAdmin();\n      }\n    }\n"), 6},
		{"roll-ups written", "counters", wrap("    match /rollups/{id} { allow write: if true; }\n"), 4},
		{"any collection's documents", "counters", wrap("    match /{collection}/{doc} { allow get: if request.auth.token.admin == true; }\n"), 4},
		{"extension shards", "extension-clients", wrap("    match /posts/{post=**} { allow write: if true; }\n"), 4},
		{"owner-only notes", "counters", notesApp, 0},
		{"closed catch-all", "guide-clients", wrap("    match /{document=**} { allow read, write: if false; }\n"), 0},
		{"users' subtrees", "counters", wrap("    match /users/{uid}/{document=**} { allow read, write: if request.auth.uid == uid; }\n"), 0},
		{"extension documents themselves", "extension-clients", wrap("    match /posts/{post} { allow read: if true; }\n"), 0},
		{"the counters' paths in another variant", "extension-clients", wrap("    match /rollups/{id} { allow get: if true; }\n"), 0},
	} {
		_, err := Compose([]byte(c.app), block(t, c.variant), c.variant, foldsOf(c.variant))
		var refused *RefusedError
		switch {
		case c.line == 0 && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.line != 0 && !errors.As(err, &refused):
			t.Errorf("%s: err %v, want the app refused at line %d", c.name, err, c.line)
		case c.line != 0 && (len(refused.Problems) != 1 || refused.Problems[0].Line != c.line || !strings.Contains(refused.Problems[0].Message, "rules are OR-ed")):
			t.Errorf("%s: refused with %+v, want one problem at line %d", c.name, refused.Problems, c.line)
		}
	}
	_, err := Compose([]byte(strings.Replace(notesApp, "rules_version = '2';", "", 1)), block(t, "counters"), "counters", nil)
	if err == nil || !strings.Contains(err.Error(), "rules_version = '2'") {
		t.Errorf("an app without rules_version 2: %v, want it refused", err)
	}
	if _, err := Compose([]byte("rules_version = '2';\n"), block(t, "counters"), "counters", nil); err == nil || !strings.Contains(err.Error(), "service cloud.firestore") {
		t.Errorf("an app without service cloud.firestore: %v, want it refused", err)
	}
}

// TestStandaloneFilesAreGenerated: the repository's firestore*.rules are the blocks composed with
// rules that open nothing else (go generate ./rules writes them).
func TestStandaloneFilesAreGenerated(t *testing.T) {
	for _, v := range Variants {
		want, err := Standalone(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", StandaloneFile(v)))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from rules.Standalone(%q): run go generate ./rules", StandaloneFile(v), v)
		}
	}
}

// TestExampleAppFileIsGenerated: firestore.example-app.rules, the local stack's rules, is the example
// app's own ruleset with the counters' block added, and that ruleset alone opens nothing of ours.
func TestExampleAppFileIsGenerated(t *testing.T) {
	app, err := os.ReadFile(filepath.Join("..", ExampleAppSource))
	if err != nil {
		t.Fatal(err)
	}
	want, err := ExampleApp(app)
	if err != nil {
		t.Fatalf("%s cannot take the counters' block: %v", ExampleAppSource, err)
	}
	got, err := os.ReadFile(filepath.Join("..", ExampleAppFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from rules.ExampleApp(%s): run go generate ./rules", ExampleAppFile, ExampleAppSource)
	}
	if !strings.HasPrefix(string(got), strings.TrimSuffix(string(app), "}\n")) {
		t.Errorf("%s does not keep the app's rules as they are", ExampleAppFile)
	}
}

// TestBlocksNameTheConfiguredCollections: the counters' blocks cover exactly the top-level
// collections the functions write, with the default names (functions/config) and, through Named,
// with others; the guide-clients block's lookup of a counter document names the counters collection.
func TestBlocksNameTheConfiguredCollections(t *testing.T) {
	renamed := shared.Schema{Counters: "like_counters", Rollups: "like_rollups", Tops: "like_tops", Dedupe: "counter_like_keys"}
	for _, names := range []shared.Schema{config.Default().Schema(), renamed} {
		want := []string{names.Counters, names.Sweep(), names.Dedupe, names.Rollups, names.Tops}
		slices.Sort(want)
		for _, v := range []string{"counters", "guide-clients"} {
			named := Named(block(t, v), names)
			rs, err := parse("service cloud.firestore {\n" + string(named) + "\n}")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range rs.allows {
				if c := a.path[3].text; !slices.Contains(got, c) {
					got = append(got, c)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s block named %+v covers %v, want %v", v, names, got, want)
			}
			if v == "guide-clients" && !strings.Contains(string(named), "/documents/"+names.Counters+"/$(counterId)") {
				t.Errorf("guide-clients block named %+v: its counter lookup does not name %s", names, names.Counters)
			}
		}
	}
}

// TestComposeRefusesExtensionShardsOutsideTheBlock: with the fold in play (the extension block, or
// EXTENSION_FOLDS declaring documents), an app allow that lets clients write extension shards
// (users/{uid}/{sub}/{doc} reaches users/u1/_counter_shards_/x) is refused, as is a block that
// opens shards under documents the fold does not fold; reads, named subcollections and apps
// without the fold are not.
func TestComposeRefusesExtensionShardsOutsideTheBlock(t *testing.T) {
	wrap := func(matches string) string {
		return "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n" + matches + "  }\n}\n"
	}
	subcollections := wrap("    match /users/{uid}/{sub}/{doc} {\n      allow read, write: if request.auth.uid == uid;\n    }\n")
	for _, c := range []struct {
		name, variant, app string
		folded             []string
		line               int // -1: accepted
		says               string
	}{
		{"a user's subcollections, with the extension block", "extension-clients", subcollections, ExampleFoldPatterns(), 5, "never counted"},
		{"a user's subcollections, folded", "counters", subcollections, []string{"users/{uid}"}, 5, "past the limits of the block"},
		{"shards named", "extension-clients", wrap("    match /users/{uid}/_counter_shards_/{s} { allow create: if true; }\n"), ExampleFoldPatterns(), 4, "never counted"},
		{"a user's subcollections, without the fold", "counters", subcollections, nil, -1, ""},
		{"named subcollections", "extension-clients", wrap("    match /users/{uid}/notes/{doc} { allow write: if request.auth.uid == uid; }\n"), ExampleFoldPatterns(), -1, ""},
		{"reads only", "extension-clients", wrap("    match /users/{uid}/{sub}/{doc} { allow read: if true; }\n"), ExampleFoldPatterns(), -1, ""},
		{"a block opening posts' shards, posts not folded", "extension-clients", notesApp, []string{"pages/{page}"}, 0, "posts/{post}/_counter_shards_"},
		{"a block without any fold", "extension-clients", notesApp, nil, 0, "never be counted"},
	} {
		_, err := Compose([]byte(c.app), block(t, c.variant), c.variant, c.folded)
		var refused *RefusedError
		switch {
		case c.line < 0 && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.line >= 0 && !errors.As(err, &refused):
			t.Errorf("%s: err %v, want refused at line %d", c.name, err, c.line)
		case c.line >= 0 && (refused.Problems[0].Line != c.line || !strings.Contains(refused.Problems[0].Message, c.says)):
			t.Errorf("%s: refused with %+v, want line %d saying %q", c.name, refused.Problems, c.line, c.says)
		case c.line >= 0:
			t.Logf("%s: %v", c.name, err)
		}
	}
}
