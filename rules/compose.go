// Package rules adds the counters' rules block to an app's Firestore ruleset; see docs/api.md,
// "Security rules".
//
// Not a supported import: see package counters.
package rules

import (
	"embed"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/shared"
)

//go:generate go run ../cmd/rules -standalone ..

// Variants of the counters' block, each in <variant>.rules of this folder.
var Variants = []string{"counters", "guide-clients", "extension-clients"}

//go:embed counters.rules guide-clients.rules extension-clients.rules
var blocks embed.FS

// Block returns the block of a variant.
func Block(variant string) ([]byte, error) {
	if !slices.Contains(Variants, variant) {
		return nil, fmt.Errorf("variant %q: unknown; known: %s", variant, strings.Join(Variants, ", "))
	}
	return blocks.ReadFile(variant + ".rules")
}

// topLevel matches a block path's top-level collection.
var topLevel = regexp.MustCompile(`(match /|/documents/)([A-Za-z0-9_.-]+)/`)

// Named returns block with its default collection names replaced by names.
func Named(block []byte, names shared.Schema) []byte {
	defaults := config.Default().Schema()
	renamed := map[string]string{defaults.Counters: names.Counters, defaults.Sweep(): names.Sweep(),
		defaults.Rollups: names.Rollups, defaults.Tops: names.Tops, defaults.Dedupe: names.Dedupe}
	return topLevel.ReplaceAllFunc(block, func(m []byte) []byte {
		sub := topLevel.FindSubmatch(m)
		if to, ok := renamed[string(sub[2])]; ok {
			return []byte(string(sub[1]) + to + "/")
		}
		return m
	})
}

// Marker and endMarker begin a composed block's first and last lines.
const (
	Marker    = "// BEGIN distributed-counters rules"
	endMarker = "// END distributed-counters rules"
)

// RefusedError says why an app's ruleset cannot take the block.
type RefusedError struct {
	Problems []Problem
}

// Problem is one reason for a refusal at Line (0: the whole file).
type Problem struct {
	Line    int
	Message string
}

func (e *RefusedError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = fmt.Sprintf("line %d: %s", p.Line, p.Message)
	}
	return strings.Join(lines, "\n")
}

// ExampleFolds is EXTENSION_FOLDS for the extension-clients block's example documents.
const ExampleFolds = "pages/{page}:visits posts/{post}:likes,stats.views"

// ExampleFoldPatterns are ExampleFolds' document patterns.
func ExampleFoldPatterns() []string {
	ts, err := extshards.ParseTargets(ExampleFolds)
	if err != nil {
		panic(err)
	}
	return ts.Patterns()
}

// Compose returns app with block (named name) added to its service block, or replacing a previous
// one; the rest is unchanged. It refuses (*RefusedError) an app without rules_version 2, an app
// allow on the block's paths, and (see shardProblems) extension shard writes outside folded.
func Compose(app, block []byte, name string, folded []string) ([]byte, error) {
	text, at, err := removeBlock(string(app))
	if err != nil {
		return nil, err
	}
	appRules, err := parse(text)
	if err != nil {
		return nil, &RefusedError{[]Problem{{0, err.Error()}}}
	}
	ours, err := parse("service cloud.firestore {\n" + string(block) + "\n}\n")
	if err != nil {
		return nil, fmt.Errorf("block %s: %w", name, err)
	}
	var problems []Problem
	if !appRules.version2 {
		problems = append(problems, Problem{0, "no rules_version = '2': the counters' rules are written in version 2, and adding it " +
			"changes what a {name=**} wildcard of your rules matches (one segment or more becomes any number); " +
			"review your rules, add rules_version = '2'; at the top, and run again"})
	}
	for _, a := range appRules.allows {
		if a.closed() {
			continue
		}
		for _, o := range ours.allows {
			if overlap(a.path, o.path) {
				problems = append(problems, Problem{a.line, fmt.Sprintf("%q in match %s also reaches %s, which the counters' rules (%s) cover: "+
					"rules are OR-ed, so it would let clients past them. Limit that match to your own collections "+
					"(name them instead of a wildcard), or delete it if it is an older copy of the counters' rules",
					a.text, showPath(a.path), showPath(o.path), name)})
				break
			}
		}
	}
	problems = append(problems, shardProblems(appRules, ours, name, folded)...)
	if len(problems) > 0 {
		return nil, &RefusedError{problems}
	}
	if at < 0 {
		at = appRules.serviceClose
		if lineStart := strings.LastIndexByte(text[:at], '\n') + 1; strings.TrimSpace(text[lineStart:at]) == "" {
			at = lineStart
		} else {
			text, at = text[:at]+"\n"+text[at:], at+1
		}
	}
	return []byte(text[:at] + indent(blockText(block, name)) + text[at:]), nil
}

// blockText is block between the marker lines.
func blockText(block []byte, name string) string {
	return fmt.Sprintf("%s (%s): written by `make rules`; edit outside these lines.\n%s\n%s\n",
		Marker, name, strings.TrimRight(string(block), "\n"), endMarker)
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "")
}

// Remove returns app without the block Compose added, and whether it held one.
func Remove(app []byte) ([]byte, bool, error) {
	text, at, err := removeBlock(string(app))
	if err != nil {
		return nil, false, err
	}
	return []byte(text), at >= 0, nil
}

// removeBlock returns app without a composed block, and where it was (-1: none).
func removeBlock(app string) (string, int, error) {
	begin := lineIndex(app, Marker)
	if begin < 0 {
		return app, -1, nil
	}
	end := lineIndex(app[begin:], endMarker)
	if end < 0 {
		return "", 0, &RefusedError{[]Problem{{strings.Count(app[:begin], "\n") + 1, "a counters' block begins here and never ends (" + endMarker + ")"}}}
	}
	end += begin
	if nl := strings.IndexByte(app[end:], '\n'); nl >= 0 {
		end += nl + 1
	} else {
		end = len(app)
	}
	return app[:begin] + app[end:], begin, nil
}

// lineIndex is the offset of the first line of s beginning with prefix (blanks aside), or -1.
func lineIndex(s, prefix string) int {
	off := 0
	for line := range strings.SplitAfterSeq(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), prefix) {
			return off
		}
		off += len(line)
	}
	return -1
}

// standaloneBase is a ruleset for a database of its own.
const standaloneBase = `rules_version = '2';

// Security rules for a database of its own, written by go generate ./rules (do not edit): the
// distributed counters' rules (between the BEGIN and END lines: rules/%[1]s.rules)%[2]s,
// and nothing else open to clients. A database that already has rules keeps them: add the block
// to them with make rules APP_RULES=<your rules file> (docs/api.md, "Security rules").
service cloud.firestore {
  match /databases/{database}/documents {
%[3]s    // Nothing else is open to clients. (Rules are allow-lists: a request that no rule allows is
    // denied; these lines only say so.)
    match /{document=**} {
      allow read, write: if false;
    }
  }
}
`

// extensionExampleApp opens reads of the extension variant's example documents.
const extensionExampleApp = `    // The example counter documents: anyone may read them; only FoldExtensionShards writes them.
    match /pages/{page} {
      allow get: if true;
    }
    match /posts/{post} {
      allow get: if true;
    }

`

// Standalone returns the ruleset of a database holding only the counters' block of variant.
func Standalone(variant string) ([]byte, error) {
	block, err := Block(variant)
	if err != nil {
		return nil, err
	}
	what, extra, folded := "", "", []string(nil)
	if variant == "extension-clients" {
		what, extra, folded = ",\n// reads of its example counter documents", extensionExampleApp, ExampleFoldPatterns()
	}
	return Compose([]byte(fmt.Sprintf(standaloneBase, variant, what, extra)), block, variant, folded)
}

// The example app's ruleset, and it composed with the counters' block (the local stack's).
const (
	ExampleAppSource = "web/example-app.rules"
	ExampleAppFile   = "firestore.example-app.rules"
)

// ExampleApp returns the example app's ruleset app with the counters' block added.
func ExampleApp(app []byte) ([]byte, error) {
	block, err := Block("counters")
	if err != nil {
		return nil, err
	}
	return Compose(app, block, "counters", nil)
}

// StandaloneFile is the repository root's file holding Standalone(variant).
func StandaloneFile(variant string) string {
	if variant == "counters" {
		return "firestore.rules"
	}
	return "firestore." + variant + ".rules"
}

// extensionShards is the collection ID of the extension's shards.
const extensionShards = extshards.ShardsCollection

// anyExtensionShard is the path of every extension shard document.
var anyExtensionShard = parsePath("/databases/{database}/documents/{document=**}/" + extensionShards + "/{shard}")

// shardProblems refuses app allows writing extension shards and block allows opening shards that
// folded does not name.
func shardProblems(app, block ruleset, name string, folded []string) []Problem {
	blockOpens := slices.ContainsFunc(block.allows, func(a allowStatement) bool {
		return !a.closed() && a.writes() && overlap(a.path, anyExtensionShard)
	})
	if len(folded) == 0 && !blockOpens {
		return nil
	}
	var foldedShards [][]segment
	for _, f := range folded {
		foldedShards = append(foldedShards, parsePath("/databases/{database}/documents/"+f+"/"+extensionShards+"/{shard}"))
	}
	var problems []Problem
	for _, a := range app.allows {
		if a.closed() || !a.writes() || !overlap(a.path, anyExtensionShard) ||
			slices.ContainsFunc(block.allows, func(o allowStatement) bool { return overlap(a.path, o.path) }) {
			continue
		}
		where := "under documents that FoldExtensionShards does not fold (EXTENSION_FOLDS): such writes are never counted"
		if slices.ContainsFunc(foldedShards, func(f []segment) bool { return overlap(a.path, f) }) {
			where = "that FoldExtensionShards folds: it would count whatever they hold, past the limits of the block (" + name + ")"
		}
		problems = append(problems, Problem{a.line, fmt.Sprintf("%q in match %s lets clients write extension shards (%s), %s. "+
			"Name your subcollections instead of a wildcard, or delete the allow",
			a.text, showPath(a.path), showPath(anyExtensionShard), where)})
	}
	for _, o := range block.allows {
		if o.closed() || !o.writes() || !overlap(o.path, anyExtensionShard) ||
			slices.ContainsFunc(foldedShards, func(f []segment) bool { return within(o.path, f) }) {
			continue
		}
		problems = append(problems, Problem{0, fmt.Sprintf("the block %s opens extension shards at match %s, under documents that "+
			"FoldExtensionShards does not fold: their increments would never be counted. Declare the documents in "+
			"EXTENSION_FOLDS (now %q), or take that match out of the block", name, showPath(o.path), strings.Join(folded, " "))})
	}
	return problems
}
