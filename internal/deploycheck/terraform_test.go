package deploycheck_test

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/manifest"
)

// terraformBlocks are the top-level blocks of every .tf file of terraform/.
func terraformBlocks(t *testing.T) []*hclsyntax.Block {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "terraform", "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	parser := hclparse.NewParser()
	var blocks []*hclsyntax.Block
	for _, file := range files {
		f, diags := parser.ParseHCLFile(file)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		blocks = append(blocks, f.Body.(*hclsyntax.Body).Blocks...)
	}
	return blocks
}

// terraformBody finds the body of the top-level block of terraform/ with the given type and labels.
func terraformBody(t *testing.T, typ string, labels ...string) *hclsyntax.Body {
	t.Helper()
	for _, b := range terraformBlocks(t) {
		if b.Type == typ && slices.Equal(b.Labels, labels) {
			return b.Body
		}
	}
	t.Fatalf("terraform/: no %s %v block", typ, labels)
	return nil
}

// nested is the first block of type typ in body.
func nested(t *testing.T, body *hclsyntax.Body, typ string) *hclsyntax.Body {
	t.Helper()
	for _, b := range body.Blocks {
		if b.Type == typ {
			return b.Body
		}
	}
	t.Fatalf("no %s block", typ)
	return nil
}

// terraformFunctions are the Terraform functions the evaluated expressions use (go-cty's, which
// Terraform's are built on).
var terraformFunctions = map[string]function.Function{
	"contains": stdlib.ContainsFunc, "lookup": stdlib.LookupFunc, "length": stdlib.LengthFunc,
	"setintersection": stdlib.SetIntersectionFunc, "setproduct": stdlib.SetProductFunc, "merge": stdlib.MergeFunc,
	"regexall": stdlib.RegexAllFunc, "concat": stdlib.ConcatFunc, "compact": stdlib.CompactFunc, "join": stdlib.JoinFunc,
}

// evalBool evaluates expr with the variables vars (as var.NAME) and the other roots in more.
func evalBool(t *testing.T, expr hcl.Expression, vars map[string]cty.Value) bool {
	t.Helper()
	v, diags := expr.Value(&hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)}, Functions: terraformFunctions})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return v.True()
}

func strings2cty(ss ...string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vals := make([]cty.Value, len(ss))
	for i, s := range ss {
		vals[i] = cty.StringVal(s)
	}
	return cty.ListVal(vals)
}

// TestTerraformRefusesPublicInvokers: both invoker variables refuse allUsers and
// allAuthenticatedUsers and take other members.
func TestTerraformRefusesPublicInvokers(t *testing.T) {
	for _, name := range []string{"http_invokers", "admin_invokers"} {
		condition := nested(t, terraformBody(t, "variable", name), "validation").Attributes["condition"].Expr
		for members, valid := range map[string]bool{"": true, "user:ops@x.com serviceAccount:b@p.iam.gserviceaccount.com": true,
			"user:ops@x.com allUsers": false, "allAuthenticatedUsers": false} {
			list := strings2cty(strings.Fields(members)...)
			if got := evalBool(t, condition, map[string]cty.Value{name: list}); got != valid {
				t.Errorf("%s = [%s]: valid %t, want %t", name, members, got, valid)
			}
		}
	}
}

// terraformLocal is the expression of local.name in terraform/.
func terraformLocal(t *testing.T, name string) hcl.Expression {
	t.Helper()
	for _, b := range terraformBlocks(t) {
		if a := b.Body.Attributes[name]; b.Type == "locals" && a != nil {
			return a.Expr
		}
	}
	t.Fatalf("terraform/: no local %s", name)
	return nil
}

// evalLocals evaluates the named locals of terraform/ in order, each seeing locals and those before
// it, and leaves ctx's "local" holding them all.
func evalLocals(t *testing.T, ctx *hcl.EvalContext, locals map[string]cty.Value, names ...string) map[string]cty.Value {
	t.Helper()
	for _, name := range names {
		ctx.Variables["local"] = cty.ObjectVal(locals)
		v, diags := terraformLocal(t, name).Value(ctx)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		locals[name] = v
	}
	ctx.Variables["local"] = cty.ObjectVal(locals)
	return locals
}

// TestTerraformInvokersFollowTheirLists: each function's invokers are exactly its list:
// http_invokers for Increment, Count and Top, admin_invokers for ConfigureCounter only, allUsers
// for Increment only when it is public, the trigger identity for the event functions; and the
// lists are authoritative: roles/run.invoker is granted only by bindings that hold the whole list
// (an _iam_binding, or an _iam_policy), so that apply removes a member no list names, such as an
// allUsers left by an earlier run or the console.
func TestTerraformInvokersFollowTheirLists(t *testing.T) {
	fn := func(admin, public bool) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"admin": cty.BoolVal(admin), "public": cty.BoolVal(public)})
	}
	ctx := &hcl.EvalContext{Functions: terraformFunctions, Variables: map[string]cty.Value{
		"var": cty.ObjectVal(map[string]cty.Value{
			"http_invokers": strings2cty("user:app@x.com"), "admin_invokers": strings2cty("user:ops@x.com"),
		}),
		"local": cty.ObjectVal(map[string]cty.Value{
			"event_functions": cty.ObjectVal(map[string]cty.Value{"RollupScheduled": fn(false, false)}),
			"http_functions": cty.ObjectVal(map[string]cty.Value{
				"Increment": fn(false, true), "Count": fn(false, false), "ConfigureCounter": fn(true, false),
			}),
		}),
		"google_service_account": cty.ObjectVal(map[string]cty.Value{"identity": cty.ObjectVal(map[string]cty.Value{
			"trigger": cty.ObjectVal(map[string]cty.Value{"email": cty.StringVal("trigger@p.iam.gserviceaccount.com")}),
		})}),
	}}
	v, diags := terraformLocal(t, "invokers").Value(ctx)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	got := map[string]string{}
	for entry, members := range v.AsValueMap() {
		var list []string
		for _, m := range members.AsValueSlice() {
			list = append(list, m.AsString())
		}
		slices.Sort(list)
		got[entry] = strings.Join(list, " ")
	}
	want := map[string]string{"ConfigureCounter": "user:ops@x.com", "Count": "user:app@x.com", "Increment": "allUsers user:app@x.com",
		"RollupScheduled": "serviceAccount:trigger@p.iam.gserviceaccount.com"}
	if !maps.Equal(got, want) {
		t.Errorf("invokers %v, want %v", got, want)
	}

	authoritative := 0
	for _, b := range terraformBlocks(t) {
		role := b.Body.Attributes["role"]
		if b.Type != "resource" || role == nil {
			continue
		}
		if r, diags := role.Expr.Value(nil); diags.HasErrors() || r.AsString() != "roles/run.invoker" {
			continue
		}
		switch typ := b.Labels[0]; {
		case strings.HasSuffix(typ, "_iam_binding"):
			authoritative++
			if traversal, ok := b.Body.Attributes["for_each"].Expr.(*hclsyntax.ScopeTraversalExpr); !ok ||
				len(traversal.Traversal) != 2 || traversal.Traversal.RootName() != "local" ||
				traversal.Traversal[1].(hcl.TraverseAttr).Name != "invokers" {
				t.Errorf("%s.%s: for_each must be local.invokers, every function's whole list", typ, b.Labels[1])
			}
		default:
			t.Errorf("%s.%s grants roles/run.invoker member by member: apply keeps every member no list names (an allUsers left by an earlier run or the console)", typ, b.Labels[1])
		}
	}
	if authoritative == 0 {
		t.Error("terraform/: no _iam_binding grants roles/run.invoker")
	}
}

// TestTerraformOptInFunctionsOnlyWhenNamed: local.functions, evaluated over the generated
// deployment, holds an opt-in function only when var.opt_in names it, and gives a from-root
// Firestore trigger its pattern as declared (other triggers below the counters collection).
func TestTerraformOptInFunctionsOnlyWhenNamed(t *testing.T) {
	deployment := generatedDeployment(t)
	funcs := maps.Clone(terraformFunctions)
	funcs["try"] = tryfunc.TryFunc
	for _, optIn := range [][]string{nil, {"fold-extension-shards"}} {
		optInSet := cty.SetValEmpty(cty.String)
		if len(optIn) > 0 {
			optInSet = cty.SetVal([]cty.Value{cty.StringVal(optIn[0])})
		}
		ctx := &hcl.EvalContext{Functions: funcs, Variables: map[string]cty.Value{
			"var": cty.ObjectVal(map[string]cty.Value{
				"opt_in": optInSet, "function_settings": cty.MapValEmpty(cty.DynamicPseudoType),
				"counters_collection": cty.StringVal("tally"), "public_increments": cty.False,
			}),
			"local": cty.ObjectVal(map[string]cty.Value{"deployment": deployment, "source_functions": cty.EmptyObjectVal}),
		}}
		v, diags := terraformLocal(t, "functions").Value(ctx)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		for _, f := range manifest.Deployed() {
			has := v.Type().HasAttribute(f.EntryPoint)
			if want := (!f.OptIn || slices.Contains(optIn, f.Name)) && !f.PerSource; has != want { // per pattern: sources_test.go
				t.Errorf("opt_in %q: deploys %s %t, want %t", optIn, f.Name, has, want)
				continue
			}
			if !has || f.Trigger.Document == "" {
				continue
			}
			want := f.Trigger.Document
			if !f.Trigger.FromRoot {
				want = "tally/" + want
			}
			if got := v.GetAttr(f.EntryPoint).GetAttr("document").AsString(); got != want {
				t.Errorf("%s: document %q, want %q", f.Name, got, want)
			}
		}
	}
}

// TestTerraformLeavesRulesUnlessAskedToReplaceThem: the ruleset and its release exist only when
// replace_rules_with names a file, which must hold the counters' block (make rules writes it);
// otherwise the database's rules are left alone and output security_rules says what to add.
func TestTerraformLeavesRulesUnlessAskedToReplaceThem(t *testing.T) {
	dir := t.TempDir()
	composed, plain := filepath.Join(dir, "composed.rules"), filepath.Join(dir, "app.rules")
	if err := os.WriteFile(composed, []byte("service cloud.firestore {\n  // BEGIN distributed-counters rules (counters)\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, []byte("service cloud.firestore {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	funcs := maps.Clone(terraformFunctions)
	funcs["try"] = tryfunc.TryFunc
	funcs["join"] = stdlib.JoinFunc
	funcs["file"] = function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(args[0].AsString())
			return cty.StringVal(string(b)), err
		},
	})
	funcs["strcontains"] = function.New(&function.Spec{
		Params: []function.Parameter{{Name: "s", Type: cty.String}, {Name: "sub", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(strings.Contains(args[0].AsString(), args[1].AsString())), nil
		},
	})
	eval := func(expr hcl.Expression, file cty.Value) cty.Value {
		t.Helper()
		v, diags := expr.Value(&hcl.EvalContext{Functions: funcs, Variables: map[string]cty.Value{
			"var": cty.ObjectVal(map[string]cty.Value{"replace_rules_with": file}),
		}})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return v
	}
	for _, resource := range []string{"google_firebaserules_ruleset", "google_firebaserules_release"} {
		count := terraformBody(t, "resource", resource, "firestore").Attributes["count"]
		if count == nil {
			t.Errorf("%s has no count: it always replaces the database's rules", resource)
			continue
		}
		for file, want := range map[string]int64{"": 0, composed: 1} {
			v := cty.NullVal(cty.String)
			if file != "" {
				v = cty.StringVal(file)
			}
			if got, _ := eval(count.Expr, v).AsBigFloat().Int64(); got != want {
				t.Errorf("%s: count %d with replace_rules_with %q, want %d", resource, got, file, want)
			}
		}
	}
	valid := nested(t, terraformBody(t, "variable", "replace_rules_with"), "validation").Attributes["condition"].Expr
	for file, want := range map[string]bool{composed: true, plain: false, filepath.Join(dir, "missing.rules"): false} {
		if got := eval(valid, cty.StringVal(file)).True(); got != want {
			t.Errorf("replace_rules_with = %s: valid %t, want %t", filepath.Base(file), got, want)
		}
	}
	if !eval(valid, cty.NullVal(cty.String)).True() {
		t.Error("replace_rules_with = null: invalid, want valid")
	}
	said := eval(terraformBody(t, "output", "security_rules").Attributes["value"].Expr, cty.NullVal(cty.String)).AsString()
	if !strings.Contains(said, "Left the database's security rules as they are") || !strings.Contains(said, "make rules APP_RULES=") {
		t.Errorf("output security_rules without replace_rules_with: %q; want it to say the rules were left and what to add", said)
	}
}

// TestDeadLetterCommandQuotesItsValues: the local-exec provisioner of pubsub.tf, run as Terraform
// runs it (/bin/sh -c COMMAND, with its environment), hands deploy.sh the module's values as whole
// arguments, whatever they hold: no value becomes shell code.
func TestDeadLetterCommandQuotesItsValues(t *testing.T) {
	requireBash(t)
	var provisioner *hclsyntax.Body
	for _, b := range terraformBody(t, "resource", "terraform_data", "dead_letter_policy").Blocks {
		if b.Type == "provisioner" && b.Labels[0] == "local-exec" {
			provisioner = b.Body
		}
	}
	if provisioner == nil {
		t.Fatal("terraform_data.dead_letter_policy: no local-exec provisioner")
	}
	dir := t.TempDir()
	module := filepath.Join(dir, "my module's copy") // a path with a space and a quote
	for _, sub := range []string{"terraform", "scripts"} {
		if err := os.MkdirAll(filepath.Join(module, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	record := filepath.Join(dir, "args")
	recorder := "#!/usr/bin/env bash\nprintf '%s\\0' \"$@\" >" + strconv.Quote(record) + "\n"
	if err := os.WriteFile(filepath.Join(module, "scripts", "deploy.sh"), []byte(recorder), 0o755); err != nil {
		t.Fatal(err)
	}
	project, region := `p'; touch injected; echo '`, `r $(touch injected) "x"`
	ctx := &hcl.EvalContext{Functions: terraformFunctions, Variables: map[string]cty.Value{
		"var": cty.ObjectVal(map[string]cty.Value{"project": cty.StringVal(project), "region": cty.StringVal(region),
			"max_delivery_attempts": cty.NumberIntVal(10)}),
		"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(filepath.Join(module, "terraform"))}),
	}}
	command, diags := provisioner.Attributes["command"].Expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cmd := exec.Command("/bin/sh", "-c", command.AsString())
	cmd.Dir = dir
	cmd.Env = os.Environ()
	if a := provisioner.Attributes["environment"]; a != nil {
		env, diags := a.Expr.Value(ctx)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		for name, v := range env.AsValueMap() {
			s, err := convert.Convert(v, cty.String)
			if err != nil {
				t.Fatal(err)
			}
			cmd.Env = append(cmd.Env, name+"="+s.AsString())
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command.AsString(), err, out)
	}
	got, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--dead-letter-only", "--project", project, "--region", region, "--max-delivery-attempts", "10"}
	if args := strings.Split(strings.TrimSuffix(string(got), "\x00"), "\x00"); !slices.Equal(args, want) {
		t.Errorf("deploy.sh got %q, want %q", args, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "injected")); err == nil {
		t.Error("a value ran as shell code: it created the file \"injected\"")
	}
}

// TestTerraformHasAVariableForEachCollection: every collection setting of functions/config (the
// _COLLECTION settings) is a variable of the module, named after it in lower case and with its
// default, that the functions' environment takes; var.environment may not set it.
func TestTerraformHasAVariableForEachCollection(t *testing.T) {
	vars := map[string]cty.Value{"project": cty.StringVal("p"), "database": cty.StringVal("d"), "environment": cty.MapValEmpty(cty.String)}
	var collections []config.Setting
	for _, s := range config.Settings() {
		if !strings.HasSuffix(s.Name, "_COLLECTION") {
			continue
		}
		collections = append(collections, s)
		name := strings.ToLower(s.Name)
		vars[name] = cty.StringVal("given_" + name)
		var def *hclsyntax.Attribute
		for _, b := range terraformBlocks(t) {
			if b.Type == "variable" && b.Labels[0] == name {
				def = b.Body.Attributes["default"]
			}
		}
		if def == nil {
			t.Errorf("%s: the module has no variable %s with a default", s.Name, name)
			continue
		}
		if v, diags := def.Expr.Value(nil); diags.HasErrors() || v.AsString() != s.Default {
			t.Errorf("variable %s: default %#v, want %q, the setting's", name, v.GoString(), s.Default)
		}
	}
	if len(collections) == 0 {
		t.Fatal("functions/config declares no _COLLECTION setting")
	}
	funcs := maps.Clone(terraformFunctions)
	funcs["keys"], funcs["setsubtract"] = stdlib.KeysFunc, stdlib.SetSubtractFunc
	ctx := &hcl.EvalContext{Functions: funcs, Variables: map[string]cty.Value{
		"var": cty.ObjectVal(vars), "local": cty.ObjectVal(map[string]cty.Value{"deployment": generatedDeployment(t),
			"counter_sources": defaultCounterSources}),
	}}
	environment, diags := terraformLocal(t, "environment").Value(ctx)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	optional, diags := terraformLocal(t, "optional_environment").Value(ctx)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, s := range collections {
		if !environment.Type().HasAttribute(s.Name) || environment.GetAttr(s.Name).AsString() != "given_"+strings.ToLower(s.Name) {
			t.Errorf("the functions' environment does not take %s from var.%s", s.Name, strings.ToLower(s.Name))
		}
		if optional.HasElement(cty.StringVal(s.Name)).True() {
			t.Errorf("var.environment may set %s, which var.%s sets", s.Name, strings.ToLower(s.Name))
		}
	}
}
