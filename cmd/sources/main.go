// Command sources checks the counter sources file (COUNTER_SOURCES, else sources.DefaultFile) and
// lists what the deploy paths deploy from it. Run it from the repository root. Usage:
//
//	sources check      check the file; print nothing
//	sources deploy     print COUNTER_SOURCES, then per source function: name, entry point, document
//	                   pattern, tab-separated (scripts/deploy.sh)
//	sources verify [-project P] [-database D] [-wait 30s] COUNTER...
//	                   compare collection counters with count()/sum() of their documents
//	sources repair [-project P] [-database D] COUNTER...
//	                   make collection counters exact again (a missing one is created)
//	sources backfill [-project P] [-database D] [-after COLLECTION] [COUNTER_OR_PATTERN...]
//	                   create and base the counters of documents that already exist
//
// A file that cannot work exits 2 with sources.Load's message.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/sources"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv))
}

// settingNames are the variables the command reads.
var settingNames = []string{"COUNTER_SOURCES", "COUNTERS_COLLECTION", "ROLLUPS_COLLECTION", "TOPS_COLLECTION", "DEDUPE_COLLECTION"}

// run runs the command and returns its exit status.
func run(args []string, stdout, stderr io.Writer, env func(string) (string, bool)) int {
	if len(args) > 0 && slices.Contains([]string{"verify", "repair", "backfill"}, args[0]) {
		return verifyOrRepair(args, stdout, stderr)
	}
	if len(args) != 1 || !slices.Contains([]string{"check", "deploy"}, args[0]) {
		fmt.Fprintln(stderr, "usage: sources check|deploy|verify|repair|backfill (docs/collection-counters.md)")
		return 2
	}
	d, err := load(env)
	if err != nil {
		fmt.Fprintln(stderr, "sources:", err)
		return 2
	}
	if args[0] == "deploy" {
		fmt.Fprintln(stdout, d.CounterSources)
		for _, f := range d.Functions {
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", f.Name, f.EntryPoint, f.Trigger.Document)
		}
	}
	return 0
}

// deployment is what the deploy paths take from the declaration file.
type deployment struct {
	CounterSources string              // the declarations inline (sources.Inline)
	Functions      []manifest.Function // manifest.SourceFunctions
}

// load checks the file lookup's variables name, as the functions will, and lists what to deploy.
func load(lookup func(string) (string, bool)) (deployment, error) {
	cfg, err := config.Parse(func(name string) (string, bool) {
		if !slices.Contains(settingNames, name) {
			return "", false
		}
		return lookup(name)
	})
	if err != nil {
		return deployment{}, err
	}
	set, err := sources.Load(cfg.CounterSources, cfg.Schema())
	if err == nil {
		err = set.CheckFolds(cfg.ExtensionTargets())
	}
	if err != nil {
		return deployment{}, err
	}
	inline, err := sources.Inline(cfg.CounterSources)
	if err != nil {
		return deployment{}, err
	}
	d := deployment{CounterSources: inline}
	for _, f := range manifest.Deployed() {
		if f.PerSource {
			d.Functions = append(d.Functions, manifest.SourceFunctions(f, set.Patterns())...)
		}
	}
	for _, f := range d.Functions {
		if strings.ContainsFunc(f.Trigger.Document, unicode.IsSpace) {
			return deployment{}, fmt.Errorf("counter sources %s: pattern %q holds white space, which scripts/deploy.sh cannot pass on", cfg.CounterSources, f.Trigger.Document)
		}
	}
	return d, nil
}
