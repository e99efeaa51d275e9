// Package rules composes the distributed counters' Firestore security rules with an app's own. A
// database has one ruleset, and deploying ours alone would replace the app's; so the counters ship
// their rules as a block (a `match /databases/{database}/documents` statement per variant, embedded
// here) that Compose adds to an app's ruleset, after checking that the app's rules do not already
// open the paths the block covers. docs/api.md, "Security rules", says how to use it.
//
// Not a supported import: see package counters for what users may import.
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

// Variants of the counters' block, each in <variant>.rules of this folder: the counters' own rules,
// the opt-in for apps that increment shards as the Firebase guide does, and the opt-in for apps
// that ship the firestore-counter extension's clients (an example to edit).
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

// topLevel matches a path of a block that starts at one of the collections named by default: a match
// statement's (match /counters/...) or a document path's (/documents/counters/...).
var topLevel = regexp.MustCompile(`(match /|/documents/)([A-Za-z0-9_.-]+)/`)

// Named returns block with the collections named as in names (the functions' settings
// COUNTERS_COLLECTION, ROLLUPS_COLLECTION, TOPS_COLLECTION, DEDUPE_COLLECTION; the sweep's state is
// named after the counters) instead of the defaults that the blocks in this folder name.
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

// Marker begins the first line of a block as Compose writes it, and endMarker its last. Compose
// replaces what lies between them (included), so that composing a composed file again updates the
// block and leaves the rest. A ruleset that holds Marker holds the counters' rules.
const (
	Marker    = "// BEGIN distributed-counters rules"
	endMarker = "// END distributed-counters rules"
)

// RefusedError says why an app's ruleset cannot take the block, one problem per line of it.
type RefusedError struct {
	Problems []Problem
}

// Problem is one reason for a refusal, at a line of the app's file (0: the file as a whole).
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

// ExampleFolds is EXTENSION_FOLDS for the example documents of the extension-clients block (and
// of the example app that make run serves).
const ExampleFolds = "pages/{page}:visits posts/{post}:likes,stats.views"

// ExampleFoldPatterns are ExampleFolds' document patterns.
func ExampleFoldPatterns() []string {
	ts, err := extshards.ParseTargets(ExampleFolds)
	if err != nil {
		panic(err)
	}
	return ts.Patterns()
}

// Compose returns app (a Firestore ruleset) with block, named name, added at the end of its
// `service cloud.firestore` block, or in place of the block a previous Compose added. The rest of
// app is unchanged, byte for byte. It refuses (*RefusedError) an app that is not rules_version 2
// (what the block is written in), and one with an allow whose condition is not literally false on
// a path the block matches: rules are OR-ed, so such an allow would let clients past the block.
// folded are the document patterns FoldExtensionShards folds (EXTENSION_FOLDS); when there are
// any, or the block opens extension shards (<doc>/_counter_shards_/<id>), it also refuses an app
// allow that lets clients write (or delete) such a shard anywhere, and a block allow that opens
// one under a document the fold does not fold (its increments would never be counted).
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

// Remove returns app without the block Compose added, and whether it held one: the app's rules as
// they were before Compose, byte for byte when the closing brace of their service block stood on a
// line of its own (otherwise Compose added one line break before it, which stays).
func Remove(app []byte) ([]byte, bool, error) {
	text, at, err := removeBlock(string(app))
	if err != nil {
		return nil, false, err
	}
	return []byte(text), at >= 0, nil
}

// removeBlock returns app without the block a previous Compose added, and where it was (-1: none).
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

// lineIndex is the offset of the start of the first line of s whose text, blanks aside, begins
// with prefix, or -1.
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

// standaloneBase is the rest of a ruleset for a database of its own: nothing else is open.
// Extra holds the matches of an example app (the extension variant's counter documents).
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

// extensionExampleApp is what an app's rules would say of the extension variant's example counter
// documents: who reads pages/{page} and posts/{post} is the app's choice, not the block's.
const extensionExampleApp = `    // The example counter documents: anyone may read them; only FoldExtensionShards writes them.
    match /pages/{page} {
      allow get: if true;
    }
    match /posts/{post} {
      allow get: if true;
    }

`

// Standalone returns the ruleset of a database that holds nothing but the counters: the block of
// variant composed with rules that open nothing else (and, for the extension variant, reads of its
// example counter documents). The repository's StandaloneFile(variant) holds it.
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

// The example app (web/) keeps likes as documents of its own: ExampleAppSource, in the repository,
// is its own ruleset (one like per user), and ExampleAppFile, at the repository's root, that ruleset
// with the counters' block added (ExampleApp): the rules the local stack loads, as an app's project
// has one ruleset with both (go generate ./rules writes it).
const (
	ExampleAppSource = "web/example-app.rules"
	ExampleAppFile   = "firestore.example-app.rules"
)

// ExampleApp returns app, the example app's own ruleset, with the counters' block added, as make
// rules APP_RULES=web/example-app.rules writes it.
func ExampleApp(app []byte) ([]byte, error) {
	block, err := Block("counters")
	if err != nil {
		return nil, err
	}
	return Compose(app, block, "counters", nil)
}

// StandaloneFile is the file of the repository's root that holds Standalone(variant).
func StandaloneFile(variant string) string {
	if variant == "counters" {
		return "firestore.rules"
	}
	return "firestore." + variant + ".rules"
}

// extensionShards is the collection ID of the extension's shards (extshards.ShardsCollection).
const extensionShards = extshards.ShardsCollection

// anyExtensionShard is the path of every extension shard document.
var anyExtensionShard = parsePath("/databases/{database}/documents/{document=**}/" + extensionShards + "/{shard}")

// shardProblems are the problems of outcome "the fold folds only what the operator names" (see
// Compose): app allows that let clients write extension shards, and block allows that open shards
// the fold would not fold. An app allow already refused for reaching the block is not named again.
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
