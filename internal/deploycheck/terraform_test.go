package deploycheck_test

import (
	"maps"
	"os"
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
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/shared"
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
	"regexall": stdlib.RegexAllFunc, "replace": stdlib.ReplaceFunc, "concat": stdlib.ConcatFunc, "compact": stdlib.CompactFunc, "join": stdlib.JoinFunc,
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

// TestTerraformInvokerListsAreAuthoritative: the invoker role is granted only by bindings that hold
// a function's whole list (an _iam_binding, or an _iam_policy), so that apply removes a member no
// list names, such as an allUsers left by an earlier run or the console.
func TestTerraformInvokerListsAreAuthoritative(t *testing.T) {
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"local": cty.ObjectVal(map[string]cty.Value{"deployment": generatedDeployment(t)})}}
	authoritative := 0
	for _, b := range terraformBlocks(t) {
		role := b.Body.Attributes["role"]
		if b.Type != "resource" || role == nil {
			continue
		}
		if r, diags := role.Expr.Value(ctx); diags.HasErrors() || r.AsString() != manifest.InvokerRole {
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
			"local": cty.ObjectVal(map[string]cty.Value{"deployment": deployment, "source_functions": cty.EmptyObjectVal, "name_prefix": cty.StringVal("")}),
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

// TestTerraformDeadLettersAreResources: no step of the module runs a program (no provisioner): the
// function with a dead-letter topic gets no Eventarc trigger, whose subscription Terraform cannot
// configure, but a push subscription of the module's with the dead-letter policy (the topic and
// var.max_delivery_attempts) and the trigger identity's OIDC token; the other event functions keep
// their triggers.
func TestTerraformDeadLettersAreResources(t *testing.T) {
	for _, b := range terraformBlocks(t) {
		hclsyntax.VisitAll(b.Body, func(n hclsyntax.Node) hcl.Diagnostics {
			if inner, ok := n.(*hclsyntax.Block); ok && inner.Type == "provisioner" {
				t.Errorf("%s %v: a %s provisioner: the apply needs a program besides Terraform", b.Type, b.Labels, inner.Labels[0])
			}
			return nil
		})
	}
	push := terraformBody(t, "resource", "google_pubsub_subscription", "push")
	policy := nested(t, push, "dead_letter_policy")
	for attr, want := range map[string]string{"dead_letter_topic": "local.dead_letter.dead_letter_topic", "max_delivery_attempts": "var.max_delivery_attempts"} {
		a := policy.Attributes[attr]
		if a == nil || !strings.Contains(string(a.Expr.Range().SliceBytes(mustRead(t, a.Expr.Range().Filename))), want) {
			t.Errorf("dead_letter_policy.%s does not take %s", attr, want)
		}
	}
	if token := nested(t, nested(t, push, "push_config"), "oidc_token"); token.Attributes["service_account_email"] == nil {
		t.Error("push_config.oidc_token: no service account: the function would refuse the pushes")
	}
	var forEach hcl.Expression
	for _, b := range terraformBody(t, "resource", "google_cloudfunctions2_function", "function").Blocks {
		if b.Type == "dynamic" && b.Labels[0] == "event_trigger" {
			forEach = b.Body.Attributes["for_each"].Expr
		}
	}
	deployment := generatedDeployment(t).GetAttr("functions")
	for _, f := range manifest.Deployed() {
		if f.PerSource || f.Trigger.EventType == "" {
			continue
		}
		v, diags := forEach.Value(&hcl.EvalContext{Variables: map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"value": deployment.GetAttr(f.EntryPoint)})}})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if got, want := v.LengthInt(), 1; f.Trigger.DeadLetterTopic != "" && got != 0 || f.Trigger.DeadLetterTopic == "" && got != want {
			t.Errorf("%s: %d Eventarc triggers (dead-letter topic %q)", f.Name, got, f.Trigger.DeadLetterTopic)
		}
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestTerraformNamePrefixReachesEveryName: with name_prefix set, every function is named with it,
// every other resource the module names takes it, and no monitoring filter, SLO or dashboard names
// a function, subscription, metric or service without it: two deployments can share a project.
func TestTerraformNamePrefixReachesEveryName(t *testing.T) {
	funcs := maps.Clone(terraformFunctions)
	funcs["try"] = tryfunc.TryFunc
	ctx := &hcl.EvalContext{Functions: funcs, Variables: map[string]cty.Value{
		"var": cty.ObjectVal(map[string]cty.Value{
			"opt_in": cty.SetValEmpty(cty.String), "function_settings": cty.MapValEmpty(cty.DynamicPseudoType),
			"counters_collection": cty.StringVal("counters"), "public_increments": cty.False,
		}),
		"local": cty.ObjectVal(map[string]cty.Value{"deployment": generatedDeployment(t), "source_functions": cty.EmptyObjectVal,
			"name_prefix": cty.StringVal("stg-")}),
	}}
	functions, diags := terraformLocal(t, "functions").Value(ctx)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for entry, f := range functions.AsValueMap() {
		if name := f.GetAttr("name").AsString(); !strings.HasPrefix(name, "stg-") {
			t.Errorf("function %s is named %q, without the prefix", entry, name)
		}
	}
	named := map[string]string{"google_pubsub_topic": "name", "google_pubsub_subscription": "name", "google_cloud_scheduler_job": "name",
		"google_service_account": "account_id", "google_storage_bucket": "name", "google_logging_metric": "name"}
	for _, b := range terraformBlocks(t) {
		if b.Type != "resource" {
			continue
		}
		attr, ok := named[b.Labels[0]]
		if !ok {
			continue
		}
		uses := false
		for _, tr := range b.Body.Attributes[attr].Expr.Variables() {
			if a, ok := tr[1].(hcl.TraverseAttr); tr.RootName() == "local" && ok && (a.Name == "name_prefix" || a.Name == "metric_prefix") {
				uses = true
			}
		}
		if !uses {
			t.Errorf("%s.%s: %s does not take local.name_prefix", b.Labels[0], b.Labels[1], attr)
		}
	}
	var texts []string
	var walk func(v cty.Value)
	walk = func(v cty.Value) {
		switch {
		case v.IsNull():
		case v.Type() == cty.String:
			texts = append(texts, v.AsString())
		case v.CanIterateElements():
			for it := v.ElementIterator(); it.Next(); {
				_, e := it.Element()
				walk(e)
			}
		}
	}
	walk(evaluatedMonitoring(t, "stg-", "p"))
	all := strings.Join(texts, "\n")
	var unprefixed []string
	for _, f := range manifest.Deployed() {
		unprefixed = append(unprefixed, strconv.Quote(f.Name), strconv.Quote(f.Name+"-"))
	}
	unprefixed = append(unprefixed, "logging.googleapis.com/user/counters_", "_googleapis_com:user_counters_", strconv.Quote(shared.TopicIncrementsDeadLetter), "/services/counters/")
	for _, u := range unprefixed {
		if strings.Contains(all, u) {
			t.Errorf("local.monitoring with name_prefix stg- still names %s", u)
		}
	}
	if !strings.Contains(all, "/services/stg-counters/") || !strings.Contains(all, "user/stg_counters_rollup_canary") {
		t.Error("local.monitoring with name_prefix stg- names no prefixed SLO service or metric")
	}
}

// TestTerraformHasAVariableForEachCollection: every collection setting of functions/config (the
// _COLLECTION settings) is a variable of the module, named after it in lower case and with its
// default, that the functions' environment takes; var.environment may not set it.
func TestTerraformHasAVariableForEachCollection(t *testing.T) {
	vars := map[string]cty.Value{"project_id": cty.StringVal("p"), "database": cty.StringVal("d"), "environment": cty.MapValEmpty(cty.String)}
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
