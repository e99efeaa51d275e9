package deploycheck

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// LoadTerraform reads the module in dir, with vars overriding the variables' defaults, into a
// Deployment. The dead-letter policy the module attaches by running deploy.sh (local-exec) is what
// that command's dry run prints.
func LoadTerraform(dir string, vars map[string]cty.Value) (Deployment, error) {
	all, err := evaluate(dir, vars)
	if err != nil {
		return Deployment{}, err
	}
	d := newDeployment("terraform")
	for _, v := range all["google_pubsub_topic"] {
		d.Topics = append(d.Topics, v["name"])
	}
	for _, v := range all["google_pubsub_subscription"] {
		d.SubscribedTopics = append(d.SubscribedTopics, v["topic"])
	}
	for _, v := range all["google_cloud_scheduler_job"] {
		d.SchedulerTopics = append(d.SchedulerTopics, v["pubsub_target.0.topic_name"])
	}
	for _, v := range all["google_firestore_field"] {
		key := v["collection"] + "." + v["field"]
		if _, ok := v["ttl_config.0"]; ok {
			d.TTLFields = append(d.TTLFields, key)
		}
		_, indexed := v["index_config.0.indexes.0"]
		_, more := v["index_config.0.indexes.1"]
		switch _, configured := v["index_config.0"]; {
		case configured && !indexed: // an empty index_config exempts the field from every index
			d.UnindexedFields = append(d.UnindexedFields, key)
		case v["index_config.0.indexes.0.order"] == "ASCENDING" && !more:
			d.AscendingIndexFields = append(d.AscendingIndexFields, key)
		}
	}
	public := map[string]bool{} // Cloud Run services allUsers may invoke
	for _, v := range all["google_cloud_run_service_iam_member"] {
		public[v["service"]] = public[v["service"]] || v["member"] == "allUsers"
	}
	for _, v := range all["google_cloudfunctions2_function"] {
		f := Function{
			Name: v["name"], EntryPoint: v["build_config.0.entry_point"], Runtime: v["build_config.0.runtime"],
			EventType: v["event_trigger.0.event_type"], Topic: v["event_trigger.0.pubsub_topic"],
			TriggerLocation: v["event_trigger.0.trigger_region"], Retry: v["event_trigger.0.retry_policy"] == "RETRY_POLICY_RETRY",
			Public: public[strings.ToLower(v["name"])], Memory: v["service_config.0.available_memory"], CPU: v["service_config.0.available_cpu"],
			Concurrency:    atoi(v["service_config.0.max_instance_request_concurrency"]),
			TimeoutSeconds: atoi(v["service_config.0.timeout_seconds"]),
			MaxInstances:   atoi(v["service_config.0.max_instance_count"]),
			Env:            map[string]string{},
		}
		for i := 0; v[fmt.Sprintf("event_trigger.0.event_filters.%d.attribute", i)] != ""; i++ {
			filter := fmt.Sprintf("event_trigger.0.event_filters.%d.", i)
			switch v[filter+"attribute"] {
			case "database":
				f.Database = v[filter+"value"]
			case "document":
				if v[filter+"operator"] == "match-path-pattern" {
					f.DocumentPattern = v[filter+"value"]
				}
			}
		}
		for path, value := range v {
			if name, ok := strings.CutPrefix(path, "service_config.0.environment_variables."); ok {
				f.Env[name] = value
			}
		}
		if err := d.add(f); err != nil {
			return d, err
		}
	}
	for _, v := range all["terraform_data"] {
		command, err := SplitWords(v["provisioner.0.command"])
		if err != nil {
			return d, fmt.Errorf("terraform_data local-exec command: %w", err)
		}
		if len(command) < 2 || command[0] != "bash" || filepath.Base(command[1]) != "deploy.sh" {
			return d, fmt.Errorf("terraform runs %q: the checks know only scripts/deploy.sh", command)
		}
		ran, _, err := DryRun(command[1], command[2:]...)
		if err != nil {
			return d, fmt.Errorf("terraform_data local-exec: %w", err)
		}
		maps.Copy(d.DeadLetters, ran.DeadLetters)
	}
	return d, nil
}

// parseFiles returns the top-level blocks of every .tf file of dir.
func parseFiles(dir string) ([]*hclsyntax.Block, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no .tf files in %s: %v", dir, err)
	}
	parser := hclparse.NewParser()
	var blocks []*hclsyntax.Block
	for _, file := range files {
		f, diags := parser.ParseHCLFile(file)
		if diags.HasErrors() {
			return nil, fmt.Errorf("parse %s: %w", file, diags)
		}
		blocks = append(blocks, f.Body.(*hclsyntax.Body).Blocks...)
	}
	return blocks, nil
}

// parseModule parses the module in dir and evaluates its variables (vars, else their defaults) and
// locals, in the context it returns. Every resource and data source is unknown there.
func parseModule(dir string, vars map[string]cty.Value) ([]*hclsyntax.Block, *hcl.EvalContext, error) {
	blocks, err := parseFiles(dir)
	if err != nil {
		return nil, nil, err
	}
	abs, _ := filepath.Abs(dir)
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(abs), "root": cty.StringVal(abs)}),
			"data": cty.DynamicVal, "local": cty.EmptyObjectVal,
		},
		Functions: map[string]function.Function{
			"keys": stdlib.KeysFunc, "merge": stdlib.MergeFunc, "join": stdlib.JoinFunc, "setsubtract": stdlib.SetSubtractFunc,
			"setproduct": stdlib.SetProductFunc, "lower": stdlib.LowerFunc, "length": stdlib.LengthFunc,
			"tostring": toString, "toset": stdlib.MakeToFunc(cty.Set(cty.String)),
		},
	}
	values, locals := map[string]cty.Value{}, map[string]hcl.Expression{}
	for _, b := range blocks {
		switch b.Type {
		case "resource":
			ctx.Variables[b.Labels[0]] = cty.DynamicVal
		case "locals":
			for name, a := range b.Body.Attributes {
				locals[name] = a.Expr
			}
		case "variable":
			name := b.Labels[0]
			if v, ok := vars[name]; ok {
				values[name] = v
			} else if def, ok := b.Body.Attributes["default"]; ok {
				if values[name], err = evalOrErr(def.Expr, nil); err != nil {
					return nil, nil, fmt.Errorf("variable %s: %w", name, err)
				}
			} else {
				return nil, nil, fmt.Errorf("variable %s has no default and no value was given", name)
			}
		}
	}
	ctx.Variables["var"] = cty.ObjectVal(values)
	// A local may refer to any other: as many passes as there are locals evaluate every one.
	for range len(locals) {
		known := map[string]cty.Value{}
		for name, expr := range locals {
			if v, err := evalOrErr(expr, ctx); err == nil {
				known[name] = v
			}
		}
		ctx.Variables["local"] = cty.ObjectVal(known)
	}
	for name, expr := range locals {
		if _, err := evalOrErr(expr, ctx); err != nil {
			return nil, nil, fmt.Errorf("local.%s: %w", name, err)
		}
	}
	return blocks, ctx, nil
}

// evaluate evaluates every resource instance of the module in dir (see parseModule), flattened, by
// resource type. A resource sees the others as they evaluated, with their names standing for what
// the provider computes (withComputed); passes repeat until no value changes, so that the order of
// the blocks does not matter. A false lifecycle precondition is an error with its message, as in
// `terraform plan`.
func evaluate(dir string, vars map[string]cty.Value) (map[string][]map[string]string, error) {
	blocks, ctx, err := parseModule(dir, vars)
	if err != nil {
		return nil, err
	}
	for range len(blocks) {
		all, seen := map[string][]map[string]string{}, map[string]map[string]cty.Value{}
		for _, b := range blocks {
			if b.Type != "resource" {
				continue
			}
			typ, name := b.Labels[0], b.Labels[1]
			if seen[typ] == nil {
				seen[typ] = map[string]cty.Value{}
			}
			forEach, each := b.Body.Attributes["for_each"]
			if !each {
				v := evalBody(b.Body, ctx)
				all[typ], seen[typ][name] = append(all[typ], flatten(v)), withComputed(typ, v)
				continue
			}
			collection, err := evalOrErr(forEach.Expr, ctx)
			if err != nil || !collection.IsKnown() {
				return nil, fmt.Errorf("%s.%s: for_each cannot be known before apply: %v", typ, name, err)
			}
			byKey := map[string]cty.Value{}
			for it := collection.ElementIterator(); it.Next(); {
				key, value := it.Element()
				if collection.Type().IsSetType() {
					key = value
				}
				v := evalBody(b.Body, withIterator(ctx, "each", key, value))
				all[typ], byKey[key.AsString()] = append(all[typ], flatten(v)), withComputed(typ, v)
			}
			seen[typ][name] = cty.ObjectVal(byKey)
		}
		settled := true
		for typ, byName := range seen {
			settled = settled && ctx.Variables[typ].RawEquals(cty.ObjectVal(byName))
			ctx.Variables[typ] = cty.ObjectVal(byName)
		}
		if settled {
			return all, checkPreconditions(all)
		}
	}
	return nil, fmt.Errorf("%s: the references between resources do not settle", dir)
}

// withComputed adds to an evaluated resource what the provider computes and the module refers to:
// its id, for which its name stands, and a function's Cloud Run service (its name in lower case).
func withComputed(typ string, v cty.Value) cty.Value {
	attrs := v.AsValueMap()
	if name, ok := attrs["name"]; ok {
		attrs["id"] = name
		if typ == "google_cloudfunctions2_function" && name.IsKnown() {
			service := cty.ObjectVal(map[string]cty.Value{"service": cty.StringVal(strings.ToLower(name.AsString()))})
			attrs["service_config"] = cty.TupleVal([]cty.Value{service})
		}
	}
	return cty.ObjectVal(attrs)
}

// evalBody evaluates a block body into an object: its attributes, unknown where they cannot be
// known before apply (or refer to what this evaluator does not model), and its nested blocks, the
// dynamic ones expanded, as a list per block type.
func evalBody(body *hclsyntax.Body, ctx *hcl.EvalContext) cty.Value {
	attrs := map[string]cty.Value{}
	for name, a := range body.Attributes {
		if v, err := evalOrErr(a.Expr, ctx); err == nil {
			attrs[name] = v
		} else {
			attrs[name] = cty.DynamicVal
		}
	}
	blocks := map[string][]cty.Value{}
	for _, b := range body.Blocks {
		if b.Type != "dynamic" {
			blocks[b.Type] = append(blocks[b.Type], evalBody(b.Body, ctx))
			continue
		}
		typ := b.Labels[0]
		forEach, err := evalOrErr(b.Body.Attributes["for_each"].Expr, ctx)
		if err != nil || !forEach.IsWhollyKnown() {
			continue // as no block: plan would not know them either
		}
		for _, content := range b.Body.Blocks {
			if content.Type != "content" {
				continue
			}
			for it := forEach.ElementIterator(); it.Next(); {
				key, value := it.Element()
				blocks[typ] = append(blocks[typ], evalBody(content.Body, withIterator(ctx, typ, key, value)))
			}
		}
	}
	for typ, list := range blocks {
		attrs[typ] = cty.TupleVal(list)
	}
	return cty.ObjectVal(attrs)
}

// checkPreconditions returns the message of the first lifecycle precondition that is false.
func checkPreconditions(all map[string][]map[string]string) error {
	for _, instances := range all {
		for _, v := range instances {
			for path, value := range v {
				if strings.HasPrefix(path, "lifecycle.") && strings.HasSuffix(path, ".condition") && value == "false" {
					return fmt.Errorf("precondition failed: %s", v[strings.TrimSuffix(path, "condition")+"error_message"])
				}
			}
		}
	}
	return nil
}

// withIterator is ctx with iterator name bound to {key, value}.
func withIterator(ctx *hcl.EvalContext, name string, key, value cty.Value) *hcl.EvalContext {
	child := ctx.NewChild()
	child.Variables = map[string]cty.Value{name: cty.ObjectVal(map[string]cty.Value{"key": key, "value": value})}
	return child
}

// evalOrErr evaluates expr, its diagnostics an error.
func evalOrErr(expr hcl.Expression, ctx *hcl.EvalContext) (cty.Value, error) {
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return v, nil
}

// unknown is what flatten gives a value not known before apply, or one this evaluator cannot
// compute (a function it lacks, say).
const unknown = "(unknown before apply, or not evaluable here)"

// flatten lists an evaluated instance's values by path, e.g. "build_config.0.entry_point": every
// scalar as a string, every nested object or list as "" (present, if empty), nothing for null.
func flatten(v cty.Value) map[string]string {
	out := map[string]string{}
	var walk func(path string, v cty.Value)
	walk = func(path string, v cty.Value) {
		switch {
		case v.IsNull():
		case !v.IsKnown():
			out[path] = unknown
		case v.CanIterateElements():
			out[path] = ""
			for it := v.ElementIterator(); it.Next(); {
				key, element := it.Element()
				walk(strings.TrimPrefix(path+"."+scalar(key), "."), element)
			}
		default:
			out[path] = scalar(v)
		}
	}
	walk("", v)
	return out
}

// toString is Terraform's tostring, for the module and for flattening values.
var toString = stdlib.MakeToFunc(cty.String)

// scalar is a known number, bool or string as a string.
func scalar(v cty.Value) string {
	s, err := toString.Call([]cty.Value{v})
	if err != nil {
		return unknown
	}
	return s.AsString()
}
