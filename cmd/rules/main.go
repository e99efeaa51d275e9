// Command rules adds the distributed counters' security rules to an app's Firestore ruleset (make
// rules), or writes the rulesets of a database of its own (go generate ./rules). Usage:
//
//	rules -app FILE [-variant counters|guide-clients|extension-clients | -block FILE] [-o FILE]
//	rules -app FILE -remove [-o FILE]
//	rules -standalone DIR
//
// -app writes FILE with the block added (rules.Compose) to -o, else stdout; -remove writes it
// without (rules.Remove). Collections, EXTENSION_FOLDS and COUNTER_SOURCES's "read": "none" counters
// (closed to clients) come from the functions' settings in the
// environment. -standalone writes the repository's firestore*.rules into DIR. See docs/api.md,
// "Security rules".
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/rules"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/sources"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rules", flag.ContinueOnError)
	fs.SetOutput(stderr)
	app := fs.String("app", "", "the app's Firestore rules file, to add the counters' block to")
	variant := fs.String("variant", "counters", "the block: counters, guide-clients or extension-clients")
	blockFile := fs.String("block", "", "a block file of your own instead of -variant (an edited copy of rules/extension-clients.rules)")
	out := fs.String("o", "", "where to write the combined rules (default: standard output); may be the -app file")
	remove := fs.Bool("remove", false, "write the -app file without the counters' block instead: your app's rules as they were")
	standalone := fs.String("standalone", "", "write the rulesets of a database of its own and of the example app (firestore*.rules) into this folder (the repository)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *standalone != "" {
		if err := writeStandalone(*standalone); err != nil {
			fmt.Fprintf(stderr, "rules: %v\n", err)
			return 1
		}
		return 0
	}
	if *app == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "rules: -app FILE is required (make rules APP_RULES=FILE); -h lists the flags")
		return 2
	}
	if *remove {
		if err := removeBlock(*app, *out, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "rules: %v\n", err)
			return 1
		}
		return 0
	}
	if err := compose(*app, *variant, *blockFile, *out, stdout, stderr); err != nil {
		var refused *rules.RefusedError
		if errors.As(err, &refused) {
			fmt.Fprintf(stderr, "rules: %s cannot take the counters' rules as it is:\n", *app)
			for _, p := range refused.Problems {
				fmt.Fprintf(stderr, "%s:%d: %s\n", *app, p.Line, p.Message)
			}
			return 1
		}
		fmt.Fprintf(stderr, "rules: %v\n", err)
		return 1
	}
	return 0
}

// removeBlock writes appFile without the counters' block to out (else stdout).
func removeBlock(appFile, out string, stdout, stderr io.Writer) error {
	app, err := os.ReadFile(appFile)
	if err != nil {
		return err
	}
	text, held, err := rules.Remove(app)
	if err != nil {
		return fmt.Errorf("%s: %w", appFile, err)
	}
	if err := write(out, text, stdout); err != nil {
		return err
	}
	if !held {
		fmt.Fprintf(stderr, "rules: %s holds no counters' block; nothing to take out.\n", appFile)
	} else if out != "" {
		fmt.Fprintf(stderr, "rules: wrote %s: %s without the counters' rules. Deploy it as your database's ruleset "+
			"(as you deploy your rules, or scripts/deploy.sh --remove --replace-rules %s).\n", out, appFile, out)
	}
	return nil
}

// write writes text to the file out, or to stdout when out is empty.
func write(out string, text []byte, stdout io.Writer) error {
	if out == "" {
		_, err := stdout.Write(text)
		return err
	}
	return os.WriteFile(out, text, 0o644)
}

func compose(appFile, variant, blockFile, out string, stdout, stderr io.Writer) error {
	app, err := os.ReadFile(appFile)
	if err != nil {
		return err
	}
	name, block := variant, []byte(nil)
	if blockFile != "" {
		name = filepath.Base(blockFile)
		block, err = os.ReadFile(blockFile)
	} else {
		block, err = rules.Block(variant)
	}
	if err != nil {
		return err
	}
	names, unreadable, err := deployment(os.LookupEnv)
	if err != nil {
		return err
	}
	folded, err := foldedPatterns(os.LookupEnv, blockFile == "" && variant == "extension-clients")
	if err != nil {
		return err
	}
	combined, err := rules.Compose(app, rules.CloseReads(rules.Named(block, names), unreadable), name, folded)
	if err != nil {
		return err
	}
	if len(unreadable) > 0 {
		fmt.Fprintf(stderr, "rules: %d declaration(s) of COUNTER_SOURCES read \"none\": clients cannot read their roll-ups, "+
			"and a client query of roll-ups must name its documents (leaderboards: top lists).\n", len(unreadable))
	}
	if err := write(out, combined, stdout); err != nil || out == "" {
		return err
	}
	fmt.Fprintf(stderr, "rules: wrote %s: %s with the counters' rules (%s) added. Deploy it as your database's ruleset "+
		"(firebase deploy --only firestore:rules with firebase.json's \"rules\" naming it, terraform's replace_rules_with, "+
		"or scripts/deploy.sh --replace-rules %s).\n", out, appFile, name, out)
	return nil
}

// deployment is what the rules follow of the functions' settings, checked as the functions do: the
// collections the *_COLLECTION settings name, and the counter IDs that COUNTER_SOURCES's
// declarations close to clients (sources.Set.UnreadableIDs).
func deployment(lookup func(string) (string, bool)) (shared.Schema, []string, error) {
	c, err := config.Parse(func(name string) (string, bool) {
		if !strings.HasSuffix(name, "_COLLECTION") && name != "COUNTER_SOURCES" {
			return "", false
		}
		return lookup(name)
	})
	if err != nil {
		return shared.Schema{}, nil, fmt.Errorf("the collection names: %w", err)
	}
	set, err := sources.Load(c.CounterSources, c.Schema())
	if err != nil {
		return shared.Schema{}, nil, err
	}
	return c.Schema(), set.UnreadableIDs(), nil
}

// foldedPatterns are EXTENSION_FOLDS's patterns, checked; when unset and example holds, the example's.
func foldedPatterns(lookup func(string) (string, bool), example bool) ([]string, error) {
	v, set := lookup("EXTENSION_FOLDS")
	if !set && example {
		return rules.ExampleFoldPatterns(), nil
	}
	targets, err := extshards.ParseTargets(v)
	if err != nil {
		return nil, fmt.Errorf("EXTENSION_FOLDS: %w", err)
	}
	return targets.Patterns(), nil
}

func writeStandalone(dir string) error {
	for _, v := range rules.Variants {
		text, err := rules.Standalone(v)
		if err != nil {
			return fmt.Errorf("%s: %w", v, err)
		}
		if err := os.WriteFile(filepath.Join(dir, rules.StandaloneFile(v)), text, 0o644); err != nil {
			return err
		}
	}
	app, err := os.ReadFile(filepath.Join(dir, rules.ExampleAppSource))
	if err != nil {
		return err
	}
	text, err := rules.ExampleApp(app)
	if err != nil {
		return fmt.Errorf("%s: %w", rules.ExampleAppSource, err)
	}
	return os.WriteFile(filepath.Join(dir, rules.ExampleAppFile), text, 0o644)
}
