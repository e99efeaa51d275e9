package deploycheck

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// module is a parsed Terraform module with its variables and locals evaluated. Resources are not
// applied: an attribute that depends on one is unknown unless a reader of LoadTerraform gave that
// resource a value.
type module struct {
	blocks []*hclsyntax.Block
	ctx    *hcl.EvalContext
}

// LoadTerraform reads the module in dir with vars overriding the variables' defaults.
func LoadTerraform(dir string, vars map[string]cty.Value) (Deployment, error) {
	m, err := parseModule(dir, vars)
	if err != nil {
		return Deployment{}, err
	}
	d := Deployment{Source: "terraform", DeadLetters: map[string]DeadLetter{}}
	project := m.ctx.Variables["var"].GetAttr("project").AsString()

	trimTopic := func(id string) string { return strings.TrimPrefix(id, "projects/"+project+"/topics/") }
	// Each reader records what one resource type creates and returns the value other resources see
	// for an instance. In order: topics and subscriptions first, which the functions refer to.
	readers := []struct {
		typ  string
		read func(name string, body *hclsyntax.Body, ctx *hcl.EvalContext) (cty.Value, error)
	}{
		{"google_pubsub_topic", func(name string, body *hclsyntax.Body, ctx *hcl.EvalContext) (cty.Value, error) {
			topic, err := m.str(body, ctx, "name")
			d.Topics = append(d.Topics, topic)
			id := cty.StringVal("projects/" + project + "/topics/" + topic)
			return cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(topic), "id": id}), err
		}},
		{"google_pubsub_subscription", func(name string, body *hclsyntax.Body, ctx *hcl.EvalContext) (cty.Value, error) {
			topic, err := m.str(body, ctx, "topic")
			d.SubscribedTopics = append(d.SubscribedTopics, trimTopic(topic))
			return cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("projects/" + project + "/subscriptions/" + name)}), err
		}},
		{"google_cloudfunctions2_function", func(name string, body *hclsyntax.Body, ctx *hcl.EvalContext) (cty.Value, error) {
			f, err := m.function(body, ctx)
			d.Functions = append(d.Functions, f)
			service := cty.ObjectVal(map[string]cty.Value{"service": cty.StringVal(strings.ToLower(f.Name))})
			return cty.ObjectVal(map[string]cty.Value{
				"name": cty.StringVal(f.Name), "url": cty.UnknownVal(cty.String), "service_config": cty.TupleVal([]cty.Value{service}),
			}), err
		}},
		{"google_cloud_run_service_iam_member", func(name string, body *hclsyntax.Body, ctx *hcl.EvalContext) (cty.Value, error) {
			return cty.DynamicVal, m.markPublic(&d, body, ctx)
		}},
		{"google_cloud_scheduler_job", func(name string, body *hclsyntax.Body, ctx *hcl.EvalContext) (cty.Value, error) {
			for _, target := range m.expand(body, "pubsub_target", ctx) {
				topic, err := m.str(target.body, target.ctx, "topic_name")
				if err != nil {
					return cty.DynamicVal, err
				}
				d.SchedulerTopics = append(d.SchedulerTopics, trimTopic(topic))
			}
			return cty.DynamicVal, nil
		}},
		{"terraform_data", func(name string, body *hclsyntax.Body, ctx *hcl.EvalContext) (cty.Value, error) {
			for _, p := range m.expand(body, "provisioner", ctx) {
				command, err := m.str(p.body, p.ctx, "command")
				if err != nil {
					return cty.DynamicVal, err
				}
				d.LocalExec = append(d.LocalExec, strings.Fields(command))
			}
			return cty.DynamicVal, nil
		}},
		{"google_firestore_field", func(name string, body *hclsyntax.Body, ctx *hcl.EvalContext) (cty.Value, error) {
			return cty.DynamicVal, m.field(&d, body, ctx)
		}},
	}
	for _, r := range readers {
		if err := m.eachInstance(r.typ, r.read); err != nil {
			return d, err
		}
	}
	return d, nil
}

// ArchiveExcludes returns the excludes of the module's archive_file data source named name, evaluated.
func ArchiveExcludes(dir, name string) ([]string, error) {
	m, err := parseModule(dir, map[string]cty.Value{"project": cty.StringVal("p")})
	if err != nil {
		return nil, err
	}
	for _, b := range m.blocks {
		if b.Type != "data" || b.Labels[0] != "archive_file" || b.Labels[1] != name {
			continue
		}
		v, err := m.value(b.Body, m.ctx, "excludes")
		if err != nil || !v.IsWhollyKnown() || v.IsNull() {
			return nil, fmt.Errorf("data.archive_file.%s excludes: %v", name, err)
		}
		var excludes []string
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			excludes = append(excludes, e.AsString())
		}
		return excludes, nil
	}
	return nil, fmt.Errorf("no data.archive_file.%s in %s", name, dir)
}

// function reads one google_cloudfunctions2_function instance.
func (m *module) function(body *hclsyntax.Body, ctx *hcl.EvalContext) (Function, error) {
	f := Function{Env: map[string]string{}}
	var errs []error
	get := func(b *hclsyntax.Body, c *hcl.EvalContext, attr string, dst *string) {
		v, err := m.str(b, c, attr)
		*dst = v
		if err != nil {
			errs = append(errs, err)
		}
	}
	get(body, ctx, "name", &f.Name)
	for _, build := range m.expand(body, "build_config", ctx) {
		get(build.body, build.ctx, "entry_point", &f.EntryPoint)
		get(build.body, build.ctx, "runtime", &f.Runtime)
	}
	for _, service := range m.expand(body, "service_config", ctx) {
		var concurrency, timeout, instances string
		get(service.body, service.ctx, "available_memory", &f.Settings.Memory)
		get(service.body, service.ctx, "available_cpu", &f.Settings.CPU)
		get(service.body, service.ctx, "max_instance_request_concurrency", &concurrency)
		get(service.body, service.ctx, "timeout_seconds", &timeout)
		get(service.body, service.ctx, "max_instance_count", &instances)
		f.Settings.Concurrency, f.Settings.TimeoutSeconds, f.Settings.MaxInstances = atoi(concurrency), atoi(timeout), atoi(instances)
		env, err := m.value(service.body, service.ctx, "environment_variables")
		if err != nil || env.IsNull() || !env.IsWhollyKnown() {
			errs = append(errs, fmt.Errorf("environment_variables: %v", err))
			continue
		}
		for name, v := range env.AsValueMap() {
			f.Env[name] = v.AsString()
		}
	}
	for _, trigger := range m.expand(body, "event_trigger", ctx) {
		var retry, topic string
		get(trigger.body, trigger.ctx, "event_type", &f.EventType)
		get(trigger.body, trigger.ctx, "trigger_region", &f.TriggerLocation)
		get(trigger.body, trigger.ctx, "retry_policy", &retry)
		get(trigger.body, trigger.ctx, "pubsub_topic", &topic)
		f.Retry = retry == "RETRY_POLICY_RETRY"
		if _, after, ok := strings.Cut(topic, "/topics/"); ok {
			f.Topic = after
		}
		for _, filter := range m.expand(trigger.body, "event_filters", trigger.ctx) {
			var attr, value, operator string
			get(filter.body, filter.ctx, "attribute", &attr)
			get(filter.body, filter.ctx, "value", &value)
			get(filter.body, filter.ctx, "operator", &operator)
			switch {
			case attr == "database":
				f.Database = value
			case attr == "document" && operator == "match-path-pattern":
				f.DocumentPattern = value
			}
		}
	}
	if len(errs) > 0 {
		return f, fmt.Errorf("function %s: %v", f.Name, errs)
	}
	return f, nil
}

// markPublic marks the function an allUsers invoker binding names as public.
func (m *module) markPublic(d *Deployment, body *hclsyntax.Body, ctx *hcl.EvalContext) error {
	member, err := m.value(body, ctx, "member")
	if err != nil || !member.IsKnown() || member.AsString() != "allUsers" {
		return nil // only a known allUsers member matters
	}
	service, err := m.str(body, ctx, "service")
	if err != nil {
		return fmt.Errorf("allUsers invoker: %w", err)
	}
	for i := range d.Functions {
		if strings.ToLower(d.Functions[i].Name) == service {
			d.Functions[i].Public = true
		}
	}
	return nil
}

// field reads one google_firestore_field.
func (m *module) field(d *Deployment, body *hclsyntax.Body, ctx *hcl.EvalContext) error {
	collection, err := m.str(body, ctx, "collection")
	if err != nil {
		return err
	}
	name, err := m.str(body, ctx, "field")
	if err != nil {
		return err
	}
	key := collection + "." + name
	if len(m.expand(body, "ttl_config", ctx)) > 0 {
		d.TTLFields = append(d.TTLFields, key)
	}
	for _, config := range m.expand(body, "index_config", ctx) {
		indexes := m.expand(config.body, "indexes", config.ctx)
		if len(indexes) == 0 {
			d.UnindexedFields = append(d.UnindexedFields, key)
		}
		for _, index := range indexes {
			if scope, _ := m.str(index.body, index.ctx, "query_scope"); scope == "COLLECTION_GROUP" {
				d.CollectionGroupIndexes = append(d.CollectionGroupIndexes, key)
			}
		}
	}
	return nil
}

// parseModule parses every .tf file of dir and evaluates its variables and locals.
func parseModule(dir string, vars map[string]cty.Value) (*module, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no .tf files in %s: %v", dir, err)
	}
	parser := hclparse.NewParser()
	m := &module{}
	for _, file := range files {
		f, diags := parser.ParseHCLFile(file)
		if diags.HasErrors() {
			return nil, fmt.Errorf("parse %s: %w", file, diags)
		}
		m.blocks = append(m.blocks, f.Body.(*hclsyntax.Body).Blocks...)
	}
	abs, _ := filepath.Abs(dir)
	m.ctx = &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(abs), "root": cty.StringVal(abs)}),
		},
		Functions: map[string]function.Function{
			"keys": stdlib.KeysFunc, "merge": stdlib.MergeFunc, "join": stdlib.JoinFunc, "setsubtract": stdlib.SetSubtractFunc,
			"setproduct": stdlib.SetProductFunc, "lower": stdlib.LowerFunc,
			"tostring": stdlib.MakeToFunc(cty.String), "toset": stdlib.MakeToFunc(cty.Set(cty.String)),
		},
	}
	values := map[string]cty.Value{}
	for _, b := range m.blocks {
		if b.Type != "variable" {
			continue
		}
		name := b.Labels[0]
		if v, ok := vars[name]; ok {
			values[name] = v
		} else if def, ok := b.Body.Attributes["default"]; ok {
			v, diags := def.Expr.Value(nil)
			if diags.HasErrors() {
				return nil, fmt.Errorf("variable %s: %w", name, diags)
			}
			values[name] = v
		} else {
			return nil, fmt.Errorf("variable %s has no default and no value was given", name)
		}
	}
	m.ctx.Variables["var"] = cty.ObjectVal(values)
	m.unknownRoots()
	return m, m.evalLocals()
}

// unknownRoots makes every resource and data source the module refers to an unknown value, so that
// expressions that merely mention one still evaluate.
func (m *module) unknownRoots() {
	for _, b := range m.blocks {
		for _, attr := range allAttributes(b.Body) {
			for _, traversal := range attr.Expr.Variables() {
				root := traversal.RootName()
				if _, ok := m.ctx.Variables[root]; !ok && !isScopeName(root) {
					m.ctx.Variables[root] = cty.DynamicVal
				}
			}
		}
	}
}

// isScopeName says whether name is one Terraform or this evaluator binds itself.
func isScopeName(name string) bool {
	switch name {
	case "var", "local", "each", "count", "path", "self", "terraform":
		return true
	}
	return false
}

// allAttributes lists the attributes of body and of its nested blocks.
func allAttributes(body *hclsyntax.Body) []*hclsyntax.Attribute {
	var attrs []*hclsyntax.Attribute
	for _, a := range body.Attributes {
		attrs = append(attrs, a)
	}
	for _, b := range body.Blocks {
		attrs = append(attrs, allAttributes(b.Body)...)
	}
	return attrs
}

// evalLocals evaluates every local value, in dependency order, by passes.
func (m *module) evalLocals() error {
	pending := map[string]hcl.Expression{}
	for _, b := range m.blocks {
		if b.Type == "locals" {
			for name, a := range b.Body.Attributes {
				pending[name] = a.Expr
			}
		}
	}
	locals := map[string]cty.Value{}
	for len(pending) > 0 {
		progressed := false
		var last hcl.Diagnostics
		for _, name := range sortedKeys(pending) {
			m.ctx.Variables["local"] = cty.ObjectVal(locals)
			v, diags := pending[name].Value(m.ctx)
			if diags.HasErrors() {
				last = diags
				continue
			}
			locals[name] = v
			delete(pending, name)
			progressed = true
		}
		if !progressed {
			return fmt.Errorf("locals %v: %w", sortedKeys(pending), last)
		}
	}
	m.ctx.Variables["local"] = cty.ObjectVal(locals)
	return nil
}

// LocalStrings returns local name of the module in dir, a list of strings, evaluated.
func LocalStrings(dir, name string) ([]string, error) {
	m, err := parseModule(dir, map[string]cty.Value{"project": cty.StringVal("p")})
	if err != nil {
		return nil, err
	}
	v := m.ctx.Variables["local"]
	if !v.Type().HasAttribute(name) {
		return nil, fmt.Errorf("no local.%s in %s", name, dir)
	}
	var out []string
	for it := v.GetAttr(name).ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.Type() != cty.String {
			return nil, fmt.Errorf("local.%s is not a list of strings", name)
		}
		out = append(out, e.AsString())
	}
	return out, nil
}

// eachInstance calls read for every instance of every resource of type typ (one per for_each
// element, else one), then makes the values read returns what the module sees for those resources.
func (m *module) eachInstance(typ string, read func(name string, body *hclsyntax.Body, ctx *hcl.EvalContext) (cty.Value, error)) error {
	values := map[string]cty.Value{}
	for _, b := range m.blocks {
		if b.Type != "resource" || b.Labels[0] != typ {
			continue
		}
		name := b.Labels[1]
		forEach, ok := b.Body.Attributes["for_each"]
		if !ok {
			v, err := read(name, b.Body, m.ctx)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", typ, name, err)
			}
			values[name] = v
			continue
		}
		collection, diags := forEach.Expr.Value(m.ctx)
		if diags.HasErrors() || !collection.IsKnown() || collection.IsNull() {
			return fmt.Errorf("%s.%s: for_each cannot be known: %v", typ, name, diags)
		}
		instances := map[string]cty.Value{}
		for it := collection.ElementIterator(); it.Next(); {
			key, value := it.Element()
			if collection.Type().IsSetType() {
				key = value
			}
			ctx := withVariables(m.ctx, "each", key, value)
			v, err := read(name, b.Body, ctx)
			if err != nil {
				return fmt.Errorf("%s.%s[%s]: %w", typ, name, key.GoString(), err)
			}
			instances[key.AsString()] = v
		}
		values[name] = cty.ObjectVal(instances)
	}
	m.ctx.Variables[typ] = cty.ObjectVal(values)
	return nil
}

// scoped is a nested block's body with the context to evaluate it in.
type scoped struct {
	body *hclsyntax.Body
	ctx  *hcl.EvalContext
}

// expand returns the blocks of type typ in body: the static ones, and one per element of every
// dynamic "typ" block's for_each, with the iterator bound.
func (m *module) expand(body *hclsyntax.Body, typ string, ctx *hcl.EvalContext) []scoped {
	var out []scoped
	for _, b := range body.Blocks {
		switch {
		case b.Type == typ:
			out = append(out, scoped{b.Body, ctx})
		case b.Type == "dynamic" && b.Labels[0] == typ:
			forEach, diags := b.Body.Attributes["for_each"].Expr.Value(ctx)
			if diags.HasErrors() || !forEach.IsWhollyKnown() {
				continue
			}
			for _, content := range b.Body.Blocks {
				if content.Type != "content" {
					continue
				}
				for it := forEach.ElementIterator(); it.Next(); {
					key, value := it.Element()
					out = append(out, scoped{content.Body, withVariables(ctx, typ, key, value)})
				}
			}
		}
	}
	return out
}

// withVariables is ctx with iterator name bound to {key, value}.
func withVariables(ctx *hcl.EvalContext, name string, key, value cty.Value) *hcl.EvalContext {
	child := ctx.NewChild()
	child.Variables = map[string]cty.Value{name: cty.ObjectVal(map[string]cty.Value{"key": key, "value": value})}
	return child
}

// value evaluates attribute attr of body; a missing attribute is null.
func (m *module) value(body *hclsyntax.Body, ctx *hcl.EvalContext, attr string) (cty.Value, error) {
	a, ok := body.Attributes[attr]
	if !ok {
		return cty.NullVal(cty.DynamicPseudoType), nil
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("%s: %w", attr, diags)
	}
	return v, nil
}

// str evaluates a string attribute; null is "", unknown is an error.
func (m *module) str(body *hclsyntax.Body, ctx *hcl.EvalContext, attr string) (string, error) {
	v, err := m.value(body, ctx, attr)
	switch {
	case err != nil:
		return "", err
	case v.IsNull():
		return "", nil
	case !v.IsWhollyKnown():
		return "", fmt.Errorf("%s is not known before apply", attr)
	}
	s, err := stdlib.MakeToFunc(cty.String).Call([]cty.Value{v})
	if err != nil {
		return "", fmt.Errorf("%s: %w", attr, err)
	}
	return s.AsString(), nil
}
