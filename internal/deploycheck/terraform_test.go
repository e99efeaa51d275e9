package deploycheck_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/shardcount/counters/functions"
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
	"regexall": stdlib.RegexAllFunc, "compact": stdlib.CompactFunc, "join": stdlib.JoinFunc,
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

// TestTerraformInvokersFollowTheirLists: http_invokers reach Increment and Count, admin_invokers
// ConfigureCounter only, allUsers Increment only when it is public, the trigger identity the event
// functions.
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
	var got []string
	for key := range v.AsValueMap() {
		got = append(got, key)
	}
	slices.Sort(got)
	want := []string{"ConfigureCounter user:ops@x.com", "Count user:app@x.com", "Increment allUsers", "Increment user:app@x.com",
		"RollupScheduled trigger"}
	if !slices.Equal(got, want) {
		t.Errorf("invoker bindings %v, want %v", got, want)
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
			"local": cty.ObjectVal(map[string]cty.Value{"deployment": deployment}),
		}}
		v, diags := terraformLocal(t, "functions").Value(ctx)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		for _, f := range functions.Deployed() {
			has := v.Type().HasAttribute(f.EntryPoint)
			if want := !f.OptIn || slices.Contains(optIn, f.Name); has != want {
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
