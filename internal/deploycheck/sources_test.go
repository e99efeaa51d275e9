package deploycheck_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/functions/eventhttp"
	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/sources"
)

// Two collection counters of different patterns, and a declaration that cannot work: its counter ID
// uses a wildcard its pattern does not have.
const (
	twoSources = `[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{post}"},
		{"documents": "shops/{shop}/orders/{order}", "counter": "revenue-{shop}", "sum": "amount"}]`
	oneSource      = `[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{post}"}]`
	invalidSources = `[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{user}"}]`
)

// sourceNames are the deployed names of the count-documents functions of patterns.
func sourceNames(patterns ...string) []string {
	f, _ := manifest.DeployedFunction(functions.EntryCountDocumentWrite)
	var names []string
	for _, g := range manifest.SourceFunctions(f, patterns) {
		names = append(names, g.Name)
	}
	return names
}

// useSources writes content as a declaration file in a temporary folder of the repository and
// points COUNTER_SOURCES at it, relative to the repository root; it returns that path.
func useSources(t *testing.T, content string) string {
	t.Helper()
	dir, err := os.MkdirTemp(root, ".sources-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "sources.json"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join(filepath.Base(dir), "sources.json")
	t.Setenv("COUNTER_SOURCES", rel)
	return rel
}

// functionDeploys are the gcloud functions deploy commands of a listing, by function name.
func functionDeploys(commands [][]string) map[string][]string {
	deploys := map[string][]string{}
	for _, words := range commands {
		if len(words) > 3 && strings.Join(words[:3], " ") == "gcloud functions deploy" {
			deploys[words[3]] = words
		}
	}
	return deploys
}

// TestDryRunDeploysOneFunctionPerDeclaredPattern: with two declared patterns, the dry run deploys two
// count-documents functions, named after their patterns, each triggered by writes of its pattern's
// documents on the configured database, with retries, as the runtime account with every function's
// settings and COUNTER_SOURCES where the upload holds the file; gcloud parses each.
func TestDryRunDeploysOneFunctionPerDeclaredPattern(t *testing.T) {
	requireBash(t)
	rel := useSources(t, twoSources)
	commands, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--database", "counts", "--database-location", "eur3")
	if err != nil {
		t.Fatal(err)
	}
	deploys := functionDeploys(commands)
	rollup := flags(deploys["rollup-on-shard-write"])
	patterns := []string{"posts/{post}/likes/{like}", "shops/{shop}/orders/{order}"}
	var parse [][]string
	for i, name := range sourceNames(patterns...) {
		words, ok := deploys[name]
		if !ok {
			t.Errorf("no function %s for %s; deployed %v", name, patterns[i], slices.Collect(mapKeys(deploys)))
			continue
		}
		parse = append(parse, words)
		got := flags(words)
		want := map[string]string{
			"--entry-point":                        functions.EntryCountDocumentWrite,
			"--trigger-event-filters-path-pattern": "document=" + patterns[i],
			"--trigger-event-filters":              "type=" + eventhttp.EventFirestoreDocWritten + ",database=counts",
			"--trigger-location":                   "eur3",
			"--retry":                              "",
			"--update-labels":                      strings.Join(rollup["--update-labels"], "") + ",counters_source=count-documents",
		}
		for _, same := range []string{"--service-account", "--trigger-service-account", "--runtime", "--source", "--build-service-account"} {
			want[same] = strings.Join(rollup[same], ",")
		}
		for flag, w := range want {
			if g := strings.Join(got[flag], ","); g != w {
				t.Errorf("%s: %s is %q, want %q", name, flag, g, w)
			}
		}
		env := envPairs(strings.Join(got["--set-env-vars"], ","))
		if !slices.Contains(env, "COUNTER_SOURCES="+inlineOf(t, rel)) {
			t.Errorf("%s: environment %v, want COUNTER_SOURCES holding the declarations of %s", name, env, rel)
		}
	}
	n := 0
	for name := range deploys {
		if strings.HasPrefix(name, "count-documents") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("deploys %d count-documents functions, want 2", n)
	}
	if testing.Short() {
		return
	}
	requireGcloud(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	refused, err := deploycheck.GcloudParses(ctx, parse)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refused {
		t.Error(r)
	}
}

// TestAFreshCloneDeploysNoCollectionCounter: the repository's own declaration file declares nothing
// (the example app's are in its own file), so a deploy that sets no COUNTER_SOURCES deploys no
// count-documents function and gives every function empty declarations: it counts and mirrors none
// of an app's documents. Terraform reads the same file.
func TestAFreshCloneDeploysNoCollectionCounter(t *testing.T) {
	requireBash(t)
	set, err := sources.Load(filepath.Join(root, sources.DefaultFile), shared.Schema{Counters: "counters", Rollups: "rollups", Dedupe: "counter_dedupe", Tops: "tops"})
	if err != nil || len(set.Declarations) != 0 {
		t.Fatalf("%s: %v, %v; want no declarations", sources.DefaultFile, set, err)
	}
	t.Setenv("COUNTER_SOURCES", "")
	commands, err := deploycheck.DryRun(script, "--project", "p", "--region", "r")
	if err != nil {
		t.Fatal(err)
	}
	deploys := functionDeploys(commands)
	if len(deploys) == 0 {
		t.Fatal("the dry run deploys no function at all")
	}
	for name, words := range deploys {
		if strings.HasPrefix(name, "count-documents") {
			t.Errorf("a fresh clone deploys %s", name)
		}
		for _, pair := range envPairs(strings.Join(flags(words)["--set-env-vars"], ",")) {
			if v, ok := strings.CutPrefix(pair, "COUNTER_SOURCES="); ok && v != "[]" {
				t.Errorf("%s: COUNTER_SOURCES=%s, want []", name, v)
			}
		}
	}
}

// mapKeys iterates over m's keys.
func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestDeclarationsThatCannotWorkStopTheDeploy: a declaration file that cannot work stops the dry
// run and a real run before any command, with sources.Load's message naming the entry and the rule;
// a file outside the repository deploys.
func TestDeclarationsThatCannotWorkStopTheDeploy(t *testing.T) {
	requireBash(t)
	useSources(t, invalidSources)
	_, err := deploycheck.DryRun(script, "--project", "p", "--region", "r")
	if err == nil || !strings.Contains(err.Error(), `entry 0 ("posts/{post}/likes/{like}")`) ||
		!strings.Contains(err.Error(), `"likes-{user}" uses {user}, which the documents pattern does not have`) {
		t.Errorf("dry run with %s: %v; want it refused naming the entry and the rule", invalidSources, err)
	}
	g := newFakeGcloud(t)
	stderr, commands, err := g.deploy(t)
	if err == nil || !strings.Contains(stderr, "uses {user}") || len(commands) != 1 || commands[0] != "" {
		t.Errorf("deploy with %s: err %v, gcloud ran %q, stderr %q; want it refused before any command", invalidSources, err, commands, stderr)
	}

	// A file outside the repository works: the functions get the declarations themselves.
	outside := filepath.Join(t.TempDir(), "sources.json")
	if err := os.WriteFile(outside, []byte(oneSource), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COUNTER_SOURCES", outside)
	printed, err := deploycheck.DryRun(script, "--project", "p", "--region", "r")
	if err != nil {
		t.Fatalf("dry run with COUNTER_SOURCES outside the repository: %v", err)
	}
	if _, ok := functionDeploys(printed)[sourceNames("posts/{post}/likes/{like}")[0]]; !ok {
		t.Errorf("dry run with COUNTER_SOURCES outside the repository deploys no function for its pattern")
	}
}

// inlineOf is COUNTER_SOURCES of the deployed functions for the declaration file at path.
func inlineOf(t *testing.T, path string) string {
	t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	inline, err := sources.Inline(path)
	if err != nil {
		t.Fatal(err)
	}
	return inline
}

// TestRemovedDeclarationsLoseTheirFunctions: a function of a counter source whose pattern is no
// longer declared is deleted after the declared ones are deployed, found by its label; the
// declared one stays. The dry run shows the step; --remove deletes them all.
func TestRemovedDeclarationsLoseTheirFunctions(t *testing.T) {
	requireBash(t)
	names := sourceNames("posts/{post}/likes/{like}", "shops/{shop}/orders/{order}")
	kept, gone := names[0], names[1]
	useSources(t, oneSource)
	g := newFakeGcloud(t, "FAKE_SOURCES=projects/p/locations/r/functions/"+kept+" projects/p/locations/r/functions/"+gone)
	_, commands, err := g.deploy(t)
	if err != nil {
		t.Fatal(err)
	}
	deploys, deletes := 0, []string{}
	for _, c := range commands {
		if strings.HasPrefix(c, "functions deploy "+kept+" ") {
			deploys++
		}
		if rest, ok := strings.CutPrefix(c, "functions delete "); ok {
			if deploys == 0 {
				t.Errorf("deletes before deploying the declared function: %s", c)
			}
			deletes = append(deletes, strings.Fields(rest)[0])
		}
	}
	if deploys != 1 || !slices.Equal(deletes, []string{gone}) {
		t.Errorf("deployed %s %d times and deleted %v; want it deployed once and %s alone deleted", kept, deploys, deletes, gone)
	}

	dry, err := deploycheck.DryRun(script, "--project", "p", "--region", "r")
	if err != nil {
		t.Fatal(err)
	}
	var listed, deleted bool
	for _, words := range dry {
		line := strings.Join(words, " ")
		listed = listed || strings.HasPrefix(line, "gcloud functions list") && strings.Contains(line, "labels.counters_source")
		deleted = deleted || strings.HasPrefix(line, "gcloud functions delete DEPLOYED_SOURCES_NAME")
	}
	if !listed || !deleted {
		t.Errorf("dry run: lists the source functions %t, deletes the undeclared %t; want both shown", listed, deleted)
	}

	_, commands, err = g.deploy(t, "--remove")
	if err != nil {
		t.Fatal(err)
	}
	deletes = nil
	for _, c := range commands {
		if rest, ok := strings.CutPrefix(c, "functions delete count-documents-"); ok {
			deletes = append(deletes, "count-documents-"+strings.Fields(rest)[0])
		}
	}
	if !slices.Equal(deletes, names) {
		t.Errorf("--remove deleted %v of the source functions, want %v", deletes, names)
	}
}

// terraformFileFunctions are Terraform's functions sources.tf uses beyond terraformFunctions.
var terraformFileFunctions = map[string]function.Function{
	"try": tryfunc.TryFunc, "jsondecode": stdlib.JSONDecodeFunc, "jsonencode": stdlib.JSONEncodeFunc,
	"distinct": stdlib.DistinctFunc, "substr": stdlib.SubstrFunc,
	"startswith": function.New(&function.Spec{
		Params: []function.Parameter{{Name: "s", Type: cty.String}, {Name: "prefix", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(strings.HasPrefix(args[0].AsString(), args[1].AsString())), nil
		},
	}),
	"sha256": function.New(&function.Spec{
		Params: []function.Parameter{{Name: "s", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			sum := sha256.Sum256([]byte(args[0].AsString()))
			return cty.StringVal(hex.EncodeToString(sum[:])), nil
		},
	}),
	"fileexists": deploycheck.FileExistsFunc,
	"file": function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(args[0].AsString())
			if err != nil {
				return cty.NilVal, fmt.Errorf("file: %w", err)
			}
			return cty.StringVal(string(b)), nil
		},
	}),
}

// TestTerraformDeploysOneFunctionPerDeclaredPattern: terraform/'s local.functions, evaluated as
// Terraform plans it (nothing runs), holds one count-documents function per declared pattern, keyed
// and named as the gcloud path (cmd/sources) names it, with its pattern from the root, retries and
// its entry point, and gives the functions the declarations as COUNTER_SOURCES; dropping a
// declaration drops its function (so apply deletes it). The declarations are the file that
// environment's COUNTER_SOURCES names in the source folder, or var.counter_sources, which wins.
func TestTerraformDeploysOneFunctionPerDeclaredPattern(t *testing.T) {
	vars := map[string]cty.Value{"environment": cty.MapValEmpty(cty.String), "opt_in": cty.SetValEmpty(cty.String),
		"function_settings": cty.MapValEmpty(cty.DynamicPseudoType), "public_increments": cty.False}
	for c, name := range map[string]string{"counters": "counters", "rollups": "rollups", "tops": "tops", "dedupe": "counter_dedupe"} {
		vars[c+"_collection"] = cty.StringVal(name)
	}
	funcs := maps.Clone(terraformFunctions)
	maps.Copy(funcs, terraformFileFunctions)
	for i, patterns := range [][]string{{"posts/{post}/likes/{like}", "shops/{shop}/orders/{order}"}, {"posts/{post}/likes/{like}"}, {"shops/{shop}/orders/{order}"}} {
		content := twoSources
		if len(patterns) == 1 {
			content = oneSource
		}
		rel := useSources(t, content)
		vars["environment"] = cty.MapVal(map[string]cty.Value{"COUNTER_SOURCES": cty.StringVal(rel)})
		vars["counter_sources"] = cty.NullVal(cty.String)
		if i == 2 { // given inline, over the file
			content = `[{"documents": "shops/{shop}/orders/{order}", "counter": "orders-{shop}"}]`
			vars["counter_sources"] = cty.StringVal(content)
		}
		ctx := &hcl.EvalContext{Functions: funcs, Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)}}
		locals := evalLocals(t, ctx, map[string]cty.Value{"deployment": generatedDeployment(t), "name_prefix": cty.StringVal(""), "source_root": cty.StringVal(root)},
			"counter_sources_path", "counter_sources_file", "declarations", "counter_sources", "source_functions", "functions")
		var got, want any
		if err := json.Unmarshal([]byte(locals["counter_sources"].AsString()), &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(content), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the functions' COUNTER_SOURCES %s, want the declarations %s", locals["counter_sources"].AsString(), content)
		}
		var names []string
		for key, f := range locals["functions"].AsValueMap() {
			if f.GetAttr("entry_point").AsString() != functions.EntryCountDocumentWrite {
				continue
			}
			names = append(names, key)
			if f.GetAttr("name").AsString() != key || !f.GetAttr("retry").True() ||
				f.GetAttr("event_type").AsString() != eventhttp.EventFirestoreDocWritten {
				t.Errorf("%s: name %s, retry %s, event type %s; want its key, retries and %s", key, f.GetAttr("name").GoString(),
					f.GetAttr("retry").GoString(), f.GetAttr("event_type").GoString(), eventhttp.EventFirestoreDocWritten)
			}
			if i := slices.Index(sourceNames(patterns...), key); i < 0 || f.GetAttr("document").AsString() != patterns[i] {
				t.Errorf("%s: document %s; want one function per pattern of %q", key, f.GetAttr("document").GoString(), patterns)
			}
		}
		slices.Sort(names)
		wantNames := sourceNames(patterns...)
		slices.Sort(wantNames)
		if !slices.Equal(names, wantNames) {
			t.Errorf("declared %q: functions %v, want %v", patterns, names, wantNames)
		}
	}
}
