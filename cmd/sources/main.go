// Command sources checks the counter sources declaration file for the deploy paths and lists what
// they deploy from it. Run it from the repository root (both deploy paths do). Usage:
//
//	sources check      check the file; print nothing
//	sources deploy     check it, then print the functions' COUNTER_SOURCES on the first line and one
//	                   line per function of a counter source: name, entry point, document pattern
//	                   (tab-separated; scripts/deploy.sh reads them)
//	sources terraform  the same for Terraform's external data source: a JSON object of strings in
//	                   on standard input, one out on standard output (terraform/sources.tf)
//	sources verify [-project P] [-database D] [-wait 30s] COUNTER...
//	                   compare collection counters with count()/sum() of their documents
//	sources repair [-project P] [-database D] COUNTER...
//	                   make collection counters exact again (safe while events are in flight)
//
// The file is COUNTER_SOURCES (relative to the repository root), else sources.DefaultFile; the
// collections are COUNTERS_COLLECTION, ROLLUPS_COLLECTION, TOPS_COLLECTION and DEDUPE_COLLECTION,
// else the defaults: from the environment, or for terraform from the input object (its variables
// override the environment's). A file that cannot work fails with sources.Load's message, naming
// the entry and the rule, and exit status 2.
package main

import (
	"encoding/json"
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
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv))
}

// settingNames are the variables the command reads: the file and the collections the check needs.
var settingNames = []string{"COUNTER_SOURCES", "COUNTERS_COLLECTION", "ROLLUPS_COLLECTION", "TOPS_COLLECTION", "DEDUPE_COLLECTION"}

// run is the command with its arguments, streams and environment; it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) (string, bool)) int {
	if len(args) > 0 && (args[0] == "verify" || args[0] == "repair") {
		return verifyOrRepair(args, stdout, stderr)
	}
	if len(args) != 1 || !slices.Contains([]string{"check", "deploy", "terraform"}, args[0]) {
		fmt.Fprintln(stderr, "usage: sources check|deploy|terraform|verify|repair (docs/collection-counters.md)")
		return 2
	}
	lookup := env
	if args[0] == "terraform" {
		var query map[string]string
		if err := json.NewDecoder(stdin).Decode(&query); err != nil {
			fmt.Fprintln(stderr, "sources terraform: want a JSON object of strings on standard input:", err)
			return 2
		}
		lookup = func(name string) (string, bool) {
			if v := query[name]; v != "" {
				return v, true
			}
			return env(name)
		}
	}
	d, err := load(lookup)
	if err != nil {
		fmt.Fprintln(stderr, "sources:", err)
		return 2
	}
	switch args[0] {
	case "deploy":
		fmt.Fprintln(stdout, d.CounterSources)
		for _, f := range d.Functions {
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", f.Name, f.EntryPoint, f.Trigger.Document)
		}
	case "terraform":
		fns := map[string]map[string]string{}
		for _, f := range d.Functions {
			fns[f.Name] = map[string]string{"entry_point": f.EntryPoint, "document": f.Trigger.Document}
		}
		list, _ := json.Marshal(fns)
		out, _ := json.Marshal(map[string]string{"counter_sources": d.CounterSources, "functions": string(list)})
		fmt.Fprintln(stdout, string(out))
	}
	return 0
}

// deployment is what the deploy paths take from the declaration file.
type deployment struct {
	// CounterSources is COUNTER_SOURCES for the deployed functions: the declarations themselves
	// (sources.Inline), so the file may be anywhere and the upload need not hold it.
	CounterSources string
	// Functions are the per-source functions (manifest.SourceFunctions), one per pattern.
	Functions []manifest.Function
}

// load checks the declaration file that the variables of lookup name, as the functions will read
// it, and lists what the deploy paths deploy from it.
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
