package deploycheck_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/manifest"
)

// absencePolicy is the alert that fires when the scheduled sweep stops running.
const absencePolicy = "sweep_absent"

// overrides are the thresholds the tests give every alert policy: a number for a threshold
// condition, minutes without data for a metric-absence one.
var overrides = map[string]float64{"threshold": 7, "absent": 30}

// restPolicy is scripts/monitoring/policies/KEY.json, the AlertPolicy deploy.sh sends, decoded.
func restPolicy(t *testing.T, key string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "scripts", "monitoring", "policies", key+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// restPolicyKeys are the keys of the generated alert policies, sweep_absent required among them.
func restPolicyKeys(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "scripts", "monitoring", "policies", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range paths {
		keys = append(keys, strings.TrimSuffix(filepath.Base(p), ".json"))
	}
	if !slices.Contains(keys, absencePolicy) {
		t.Fatalf("scripts/monitoring/policies: no %s.json among %v: nothing fires when the scheduled sweep stops running", absencePolicy, keys)
	}
	return keys
}

// overridden is what policy sends with the threshold the tests give it (thresholdValue of every
// threshold condition but a minimum request count, or conditionAbsent's duration: minutes, in seconds), and the override given;
// false for a log match, which has no threshold.
func overridden(t *testing.T, key string, policy map[string]any) (override float64, ok bool) {
	t.Helper()
	conditions, _ := policy["conditions"].([]any)
	if len(conditions) == 0 {
		t.Fatalf("policy %s: no conditions", key)
	}
	for _, c := range conditions {
		condition := c.(map[string]any)
		switch {
		case condition["conditionThreshold"] != nil && condition["displayName"] == manifest.MinRequestsCondition:
			// a minimum request count keeps its threshold
		case condition["conditionThreshold"] != nil:
			override = overrides["threshold"]
			condition["conditionThreshold"].(map[string]any)["thresholdValue"] = override
		case condition["conditionAbsent"] != nil:
			override = overrides["absent"]
			condition["conditionAbsent"].(map[string]any)["duration"] = "1800s"
		case condition["conditionMatchedLog"] != nil:
			return 0, false
		default:
			t.Fatalf("policy %s: condition %v is neither a threshold, a metric absence nor a log match", key, condition)
		}
		if key == absencePolicy && condition["conditionAbsent"] == nil {
			t.Fatalf("policy %s has no metric-absence condition: %v", key, condition)
		}
	}
	return override, true
}

// TestDeployShAlertThresholdsReachTheConditions: deploy.sh --alert-threshold KEY=VALUE sends each
// policy as generated (the project in place of PROJECT_ID) but for its threshold: every threshold
// condition's thresholdValue, or sweep_absent's metric-absence duration (VALUE minutes); and it
// refuses, before anything runs, an absence threshold the API would refuse (not a whole number of
// minutes from 2 to 1410, 23.5 hours) and a threshold for a log match.
func TestDeployShAlertThresholdsReachTheConditions(t *testing.T) {
	requireBash(t)
	keys := restPolicyKeys(t)
	args := []string{"--project", "p", "--region", "r"}
	want := map[string]map[string]any{}
	var logMatch string
	for _, key := range keys {
		raw, _ := json.Marshal(restPolicy(t, key))
		var policy map[string]any
		_ = json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "projects/PROJECT_ID/", "projects/p/")), &policy)
		if override, ok := overridden(t, key, policy); ok {
			args = append(args, "--alert-threshold", key+"="+strconv.FormatFloat(override, 'f', -1, 64))
		} else {
			logMatch = key
		}
		want[key] = policy
	}
	commands, err := deploycheck.DryRun(script, args...)
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]int{}
	for _, words := range commands {
		if !strings.HasPrefix(strings.Join(words, " "), "gcloud alpha monitoring policies create ") {
			continue
		}
		var policy map[string]any
		if err := json.Unmarshal([]byte(flags(words)["--policy"][0]), &policy); err != nil {
			t.Fatalf("%v: --policy: %v", words, err)
		}
		key, _ := policy["userLabels"].(map[string]any)["counters_alert"].(string)
		sent[key]++
		if !reflect.DeepEqual(policy, want[key]) {
			t.Errorf("policy %s sent %v\nwant %v", key, policy, want[key])
		}
	}
	for _, key := range keys {
		if sent[key] != 1 {
			t.Errorf("policy %s created %d times, want once", key, sent[key])
		}
	}
	if _, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--alert-threshold", logMatch+"=1"); err == nil || !strings.Contains(err.Error(), "has no threshold") {
		t.Errorf("--alert-threshold %s=1: %v; want it refused", logMatch, err)
	}
	for _, value := range []string{"2.5", "1", "1411"} {
		_, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--alert-threshold", absencePolicy+"="+value)
		if err == nil || !strings.Contains(err.Error(), "whole number of minutes from 2 to 1410") {
			t.Errorf("--alert-threshold %s=%s: %v; want it refused", absencePolicy, value, err)
		}
	}
}

// TestTerraformAlertThresholdsReachTheConditions: terraform/monitoring.tf, evaluated over the
// generated local.monitoring (no name prefix) with alert_thresholds giving each policy a threshold,
// renders each policy as deploy.sh sends it (severity, combiner, alert strategy, and each
// condition's kind, filter, duration, aggregations, trigger) with that threshold: sweep_absent's as
// a metric-absence condition of that many minutes. Its preconditions refuse an absence threshold
// the API would refuse.
func TestTerraformAlertThresholdsReachTheConditions(t *testing.T) {
	keys := restPolicyKeys(t)
	monitoring := evaluatedMonitoring(t, "", "PROJECT_ID")
	resource := terraformBody(t, "resource", "google_monitoring_alert_policy", "counters")
	funcs := maps.Clone(terraformFunctions)
	funcs["floor"], funcs["keys"], funcs["alltrue"] = stdlib.FloorFunc, stdlib.KeysFunc, allTrueFunc
	evalContext := func(key string, thresholds cty.Value) *hcl.EvalContext {
		policies := monitoring.GetAttr("alert_policies")
		if !policies.Type().HasAttribute(key) {
			t.Fatalf("local.monitoring.alert_policies has no %s", key)
		}
		ctx := &hcl.EvalContext{Functions: funcs, Variables: map[string]cty.Value{
			"var":  cty.ObjectVal(map[string]cty.Value{"alert_thresholds": thresholds}),
			"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(key), "value": policies.GetAttr(key)}),
		}}
		evalLocals(t, ctx, map[string]cty.Value{"monitoring": monitoring}, "alert_thresholds")
		return ctx
	}
	preconditionsHold := func(key string, thresholds cty.Value) bool {
		ctx := evalContext(key, thresholds)
		for _, b := range nested(t, resource, "lifecycle").Blocks {
			if b.Type == "precondition" && !evalValue(t, ctx, b.Body.Attributes["condition"].Expr).True() {
				return false
			}
		}
		return true
	}
	rendered := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}}
	for _, name := range []string{"severity", "combiner"} {
		rendered.Attributes[name] = resource.Attributes[name]
	}
	for _, b := range resource.Blocks {
		if b.Type == "dynamic" && (b.Labels[0] == "conditions" || b.Labels[0] == "alert_strategy") {
			rendered.Blocks = append(rendered.Blocks, b)
		}
	}
	for _, key := range keys {
		policy := restPolicy(t, key)
		override, ok := overridden(t, key, policy)
		want := map[string]any{"severity": policy["severity"], "combiner": policy["combiner"], "conditions": policy["conditions"]}
		if policy["alertStrategy"] != nil {
			want["alertStrategy"] = policy["alertStrategy"]
		}
		thresholds := cty.MapValEmpty(cty.Number)
		if ok {
			thresholds = cty.MapVal(map[string]cty.Value{key: cty.NumberFloatVal(override)})
			if !preconditionsHold(key, thresholds) {
				t.Errorf("policy %s: the preconditions refuse alert_thresholds = { %s = %g }", key, key, override)
			}
		} else if preconditionsHold(key, cty.MapVal(map[string]cty.Value{key: cty.NumberIntVal(1)})) {
			t.Errorf("policy %s: a log match takes alert_thresholds = { %s = 1 }; want it refused", key, key)
		}
		if got := evalBlock(t, evalContext(key, thresholds), rendered); !reflect.DeepEqual(got, want) {
			t.Errorf("policy %s: Terraform renders %v\nwant, as deploy.sh sends it, %v", key, got, want)
		}
	}
	for _, value := range []float64{2.5, 1, 1411} {
		if preconditionsHold(absencePolicy, cty.MapVal(map[string]cty.Value{absencePolicy: cty.NumberFloatVal(value)})) {
			t.Errorf("alert_thresholds = { %s = %g }: the preconditions hold; want it refused", absencePolicy, value)
		}
	}
}

// allTrueFunc is Terraform's alltrue.
var allTrueFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
	Type:   function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		for it := args[0].ElementIterator(); it.Next(); {
			if _, v := it.Element(); !v.True() {
				return cty.False, nil
			}
		}
		return cty.True, nil
	},
})

func evalValue(t *testing.T, ctx *hcl.EvalContext, expr hcl.Expression) cty.Value {
	t.Helper()
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return v
}

// evalBlock evaluates a block body as the REST API's JSON would hold it: attribute and nested block
// names in lowerCamelCase, nested blocks (dynamic ones expanded) as lists, except the blocks the API
// holds as one object (a condition's kind, trigger, alert strategy, rate limit); empty lists left out.
func evalBlock(t *testing.T, ctx *hcl.EvalContext, body *hclsyntax.Body) map[string]any {
	t.Helper()
	out := map[string]any{}
	for name, a := range body.Attributes {
		if v := goValue(evalValue(t, ctx, a.Expr)); v != nil {
			out[camel(name)] = v
		}
	}
	for _, b := range body.Blocks {
		typ, contents := b.Type, []map[string]any{}
		if typ == "dynamic" {
			typ = b.Labels[0]
			forEach := evalValue(t, ctx, b.Body.Attributes["for_each"].Expr)
			for it := forEach.ElementIterator(); it.Next(); {
				k, v := it.Element()
				child := ctx.NewChild()
				child.Variables = map[string]cty.Value{typ: cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})}
				contents = append(contents, evalBlock(t, child, nested(t, b.Body, "content")))
			}
		} else {
			contents = append(contents, evalBlock(t, ctx, b.Body))
		}
		for _, c := range contents {
			if one := strings.HasPrefix(typ, "condition_") || typ == "trigger" || typ == "alert_strategy" || typ == "notification_rate_limit"; one {
				out[camel(typ)] = c
			} else {
				list, _ := out[camel(typ)].([]any)
				out[camel(typ)] = append(list, c)
			}
		}
	}
	return out
}

// camel is a Terraform name as the REST API spells it.
func camel(name string) string {
	parts := strings.Split(name, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

// goValue is v as encoding/json decodes it; nil for null and empty collections.
func goValue(v cty.Value) any {
	switch {
	case v.IsNull():
		return nil
	case v.Type() == cty.String:
		return v.AsString()
	case v.Type() == cty.Number:
		f, _ := v.AsBigFloat().Float64()
		return f
	case v.Type() == cty.Bool:
		return v.True()
	case v.CanIterateElements():
		var list []any
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			list = append(list, goValue(e))
		}
		if len(list) == 0 {
			return nil
		}
		return list
	}
	return v.GoString()
}

// evaluatedMonitoring is local.monitoring of terraform/monitoring.gen.tf.json as Terraform reads it:
// its strings are templates, evaluated with local.name_prefix prefix (local.metric_prefix its snake
// case) and var.project project.
func evaluatedMonitoring(t *testing.T, prefix, project string) cty.Value {
	t.Helper()
	f, diags := hclparse.NewParser().ParseJSONFile(filepath.Join(root, "terraform", "monitoring.gen.tf.json"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	content, diags := f.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "locals"}}})
	if diags.HasErrors() || len(content.Blocks) != 1 {
		t.Fatalf("monitoring.gen.tf.json: want one locals block: %v", diags)
	}
	attrs, diags := content.Blocks[0].Body.JustAttributes()
	if diags.HasErrors() || attrs["monitoring"] == nil {
		t.Fatalf("monitoring.gen.tf.json: no local monitoring: %v", diags)
	}
	v, diags := attrs["monitoring"].Expr.Value(&hcl.EvalContext{Variables: map[string]cty.Value{
		"local": cty.ObjectVal(map[string]cty.Value{"name_prefix": cty.StringVal(prefix), "metric_prefix": cty.StringVal(strings.ReplaceAll(prefix, "-", "_"))}),
		"var":   cty.ObjectVal(map[string]cty.Value{"project_id": cty.StringVal(project)}),
	}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return v
}
