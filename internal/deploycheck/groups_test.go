package deploycheck_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/sources"
)

// groupSetting is a field setting or index a deployment applies to a collection group: a TTL
// policy, or index settings (single-field or composite).
type groupSetting struct {
	group, field string
	ttl          bool
}

func (g groupSetting) String() string {
	kind := "index settings"
	if g.ttl {
		kind = "TTL policy"
	}
	return fmt.Sprintf("%s on %s.%s", kind, g.group, g.field)
}

// collectionsVariants are the collection names the deploy paths are checked with: the defaults, and
// others set as deploy.sh --env and as Terraform's collection variables.
var collectionsVariants = []map[string]string{
	{},
	{"COUNTERS_COLLECTION": "tally", "ROLLUPS_COLLECTION": "sums", "DEDUPE_COLLECTION": "counter_keys"},
}

// checkOursByName fails for every setting of a deploy path on a collection group an app may use:
// a TTL policy is only for a group whose ID contains "counter"; index settings also for the
// guide's shards and the roll-up collection (rollups).
func checkOursByName(t *testing.T, path string, settings []groupSetting, rollups string) {
	t.Helper()
	if !slices.ContainsFunc(settings, func(g groupSetting) bool { return g.ttl }) {
		t.Errorf("%s: found no TTL policy to check", path)
	}
	for _, g := range settings {
		ours := shared.OursByName(g.group)
		if !ours && (g.ttl || g.group != shared.ShardsCollection && g.group != rollups) {
			t.Errorf("%s: %s: a collection group an app may use (only IDs containing \"counter\" are ours by name)", path, g)
		}
	}
}

// TestDeployPathsTouchOnlyOurCollectionGroups: every TTL policy that deploy.sh --dry-run prints and
// that the Terraform module's resources evaluate to, over the generated deployment, is on a
// collection group whose ID contains "counter"; every index setting on such a group, on shards or on
// the roll-up collection; both paths set the same ones, with the default collection names and others.
func TestDeployPathsTouchOnlyOurCollectionGroups(t *testing.T) {
	requireBash(t)
	for _, names := range collectionsVariants {
		t.Run(fmt.Sprint(names), func(t *testing.T) {
			rollups := config.Default().RollupsCollection
			args := []string{"--project", "p", "--region", "r"}
			for _, name := range slices.Sorted(maps.Keys(names)) {
				args = append(args, "--env", name+"="+names[name])
			}
			if r, ok := names["ROLLUPS_COLLECTION"]; ok {
				rollups = r
			}
			commands, err := deploycheck.DryRun(script, args...)
			if err != nil {
				t.Fatal(err)
			}
			script := scriptGroupSettings(commands)
			checkOursByName(t, "deploy.sh", script, rollups)
			module := terraformGroupSettings(t, names)
			checkOursByName(t, "terraform", module, rollups)
			if !slices.Equal(script, module) {
				t.Errorf("deploy.sh sets %v, Terraform %v", script, module)
			}
		})
	}
}

// scriptGroupSettings are the field settings and indexes of deploy.sh's commands, sorted.
func scriptGroupSettings(commands [][]string) []groupSetting {
	var settings []groupSetting
	for _, words := range commands {
		if len(words) < 6 {
			continue
		}
		f := flags(words)
		group := strings.Join(f["--collection-group"], ",")
		switch strings.Join(words[:5], " ") {
		case "gcloud firestore fields ttls update":
			settings = append(settings, groupSetting{group: group, field: words[5], ttl: true})
		case "gcloud firestore indexes fields update":
			settings = append(settings, groupSetting{group: group, field: words[5]})
		case "gcloud firestore indexes composite create":
			for _, field := range f["--field-config"] {
				settings = append(settings, groupSetting{group: group, field: strings.TrimPrefix(strings.Split(field, ",")[0], "field-path=")})
			}
		}
	}
	return sortedSettings(settings)
}

func sortedSettings(settings []groupSetting) []groupSetting {
	slices.SortFunc(settings, func(a, b groupSetting) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(settings)
}

// terraformGroupSettings evaluates the module's google_firestore_field and google_firestore_index
// resources over the generated deployment, with the collection variables of names, managing the
// shared field settings (the default).
func terraformGroupSettings(t *testing.T, names map[string]string) []groupSetting {
	t.Helper()
	vars := map[string]cty.Value{"project_id": cty.StringVal("p"), "database": cty.StringVal("(default)"),
		"environment": cty.MapValEmpty(cty.String), "manage_shared_field_settings": cty.True}
	for _, s := range config.Settings() {
		if strings.HasSuffix(s.Name, "_COLLECTION") {
			value := s.Default
			if v, ok := names[s.Name]; ok {
				value = v
			}
			vars[strings.ToLower(s.Name)] = cty.StringVal(value)
		}
	}
	locals := map[string]cty.Value{"deployment": generatedDeployment(t), "counter_sources": defaultCounterSources}
	eval := func(expr hcl.Expression, more map[string]cty.Value) cty.Value {
		t.Helper()
		vs := map[string]cty.Value{"var": cty.ObjectVal(vars), "local": cty.ObjectVal(locals)}
		maps.Copy(vs, more)
		funcs := maps.Clone(terraformFunctions)
		funcs["keys"] = stdlib.KeysFunc
		v, diags := expr.Value(&hcl.EvalContext{Variables: vs, Functions: funcs})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return v
	}
	locals["environment"] = eval(terraformLocal(t, "environment"), nil)
	locals["field_settings"] = eval(terraformLocal(t, "field_settings"), nil)

	var settings []groupSetting
	fields := terraformBody(t, "resource", "google_firestore_field", "field")
	for key, each := range eval(fields.Attributes["for_each"].Expr, nil).AsValueMap() {
		ctx := map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(key), "value": each})}
		g := groupSetting{group: eval(fields.Attributes["collection"].Expr, ctx).AsString(),
			field: eval(fields.Attributes["field"].Expr, ctx).AsString()}
		settings = append(settings, g) // index_config: always set, empty exempts the field
		if ttl := dynamicBlock(t, fields, "ttl_config"); eval(ttl.Attributes["for_each"].Expr, ctx).LengthInt() > 0 {
			g.ttl = true
			settings = append(settings, g)
		}
	}
	indexes := terraformBody(t, "resource", "google_firestore_index", "composite")
	for key, each := range eval(indexes.Attributes["for_each"].Expr, nil).AsValueMap() {
		ctx := map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(key), "value": each})}
		group := eval(indexes.Attributes["collection"].Expr, ctx).AsString()
		for _, field := range eval(dynamicBlock(t, indexes, "fields").Attributes["for_each"].Expr, ctx).AsValueSlice() {
			settings = append(settings, groupSetting{group: group, field: field.GetAttr("fieldPath").AsString()})
		}
	}
	return sortedSettings(settings)
}

// dynamicBlock is the body of the dynamic block named name in body.
func dynamicBlock(t *testing.T, body *hclsyntax.Body, name string) *hclsyntax.Body {
	t.Helper()
	for _, b := range body.Blocks {
		if b.Type == "dynamic" && slices.Equal(b.Labels, []string{name}) {
			return b.Body
		}
	}
	t.Fatalf("no dynamic %q block", name)
	return nil
}

// defaultCounterSources is local.counter_sources (sources.tf) when the declaration file is the
// default one: its declarations, inline.
var defaultCounterSources = func() cty.Value {
	inline, err := sources.Inline(filepath.Join(root, sources.DefaultFile))
	if err != nil {
		panic(err)
	}
	return cty.StringVal(inline)
}()

// generatedDeployment is local.deployment of terraform/deployment.gen.tf.json.
func generatedDeployment(t *testing.T) cty.Value {
	t.Helper()
	return generatedLocal(t, "deployment.gen.tf.json", "deployment")
}

// generatedLocal is the local name of the generated file terraform/file.
func generatedLocal(t *testing.T, file, name string) cty.Value {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "terraform", file))
	if err != nil {
		t.Fatal(err)
	}
	var gen struct {
		Locals map[string]json.RawMessage `json:"locals"`
	}
	if err := json.Unmarshal(raw, &gen); err != nil {
		t.Fatal(err)
	}
	local, ok := gen.Locals[name]
	if !ok {
		t.Fatalf("terraform/%s: no local %s", file, name)
	}
	ty, err := ctyjson.ImpliedType(local)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ctyjson.Unmarshal(local, ty)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCollectionsGivenATTLMustSayCounter: a collection setting whose collection gets a TTL policy
// cannot name a collection an app may use, in deploy.sh, in Terraform's variable or in the
// functions' configuration; a name containing "counter" is taken.
func TestCollectionsGivenATTLMustSayCounter(t *testing.T) {
	requireBash(t)
	checked := 0
	for _, f := range manifest.FieldSettings() {
		if !f.TTL || strings.ToUpper(f.Collection) != f.Collection {
			continue
		}
		checked++
		for _, value := range []string{"members", "sessions", "my_counter_keys"} {
			valid := shared.OursByName(value)
			_, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--env", f.Collection+"="+value)
			if (err == nil) != valid || err != nil && !strings.Contains(err.Error(), `must contain "counter"`) {
				t.Errorf("deploy.sh --env %s=%s: %v; want accepted %t", f.Collection, value, err, valid)
			}
			_, err = config.Parse(func(name string) (string, bool) { return value, name == f.Collection })
			if (err == nil) != valid {
				t.Errorf("config %s=%s: %v; want accepted %t", f.Collection, value, err, valid)
			}
			variable := strings.ToLower(f.Collection)
			condition := nested(t, terraformBody(t, "variable", variable), "validation").Attributes["condition"].Expr
			v, diags := condition.Value(&hcl.EvalContext{Functions: terraformFunctions, Variables: map[string]cty.Value{
				"var": cty.ObjectVal(map[string]cty.Value{variable: cty.StringVal(value)})}})
			if diags.HasErrors() || v.True() != valid {
				t.Errorf("terraform var.%s = %q: valid %v (%v), want %t", variable, value, v, diags, valid)
			}
		}
	}
	if checked == 0 {
		t.Error("no TTL policy on a collection named by a setting: nothing checked")
	}
}

// TestOperationsListsEveryFieldSettingAndIndex: docs/operations.md's table of field settings and
// indexes has one row per declared field setting, with its setting, and one per composite index, and
// no other row that deploys something.
func TestOperationsListsEveryFieldSettingAndIndex(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| collection group and field | setting | why |\n|---|---|---|\n")
	if !ok {
		t.Fatal("docs/operations.md: no table of field settings and indexes")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	rows := map[string]string{}
	for line := range strings.SplitSeq(table, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 || strings.TrimSpace(cells[2]) == "" {
			t.Errorf("row %q: want three cells, a reason in the last", line)
			continue
		}
		rows[strings.TrimSpace(cells[0])] = cells[1]
	}
	defaults := map[string]string{}
	for _, s := range config.Settings() {
		defaults[s.Name] = s.Default
	}
	collection := func(c string) string { // a setting's name: its default
		if d, ok := defaults[c]; ok {
			return d
		}
		return c
	}
	want := map[string]string{}
	for _, f := range manifest.FieldSettings() {
		setting := "no index"
		if f.Ascending {
			setting = "ascending, collection scope only"
		}
		if f.TTL {
			setting += ", TTL policy"
		}
		want["`"+collection(f.Collection)+"."+f.Field+"`"] = setting
	}
	for _, i := range manifest.CompositeIndexes() {
		var fields []string
		for _, f := range i.Fields {
			field := "`" + f.Path + "`"
			if f.Descending {
				field += " descending"
			}
			fields = append(fields, field)
		}
		want["`"+collection(i.Collection)+"`: "+strings.Join(fields, ", ")] = "composite index"
	}
	for row, setting := range rows {
		if w, ok := want[row]; !ok && setting != "automatic (nothing to set)" {
			t.Errorf("docs/operations.md lists %s (%s), which is not declared", row, setting)
		} else if ok && setting != w {
			t.Errorf("docs/operations.md: %s is %q, declared %q", row, setting, w)
		}
	}
	for row, setting := range want {
		if _, ok := rows[row]; !ok {
			t.Errorf("docs/operations.md does not list %s (%s)", row, setting)
		}
	}
}
