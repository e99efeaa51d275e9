package deploycheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// ProviderSchemas is the output of `terraform providers schema -json`, or the part of it a module
// uses: per provider address, the provider's own block and its resource and data source schemas.
type ProviderSchemas struct {
	FormatVersion string                     `json:"format_version"`
	Providers     map[string]*ProviderSchema `json:"provider_schemas"`
}

// ProviderSchema is one provider's schema.
type ProviderSchema struct {
	Provider    *TypeSchema            `json:"provider,omitempty"`
	Resources   map[string]*TypeSchema `json:"resource_schemas,omitempty"`
	DataSources map[string]*TypeSchema `json:"data_source_schemas,omitempty"`
}

// TypeSchema is the schema of one resource type, data source or provider configuration.
type TypeSchema struct {
	Version int          `json:"version"`
	Block   *BlockSchema `json:"block"`
}

// BlockSchema lists a block's attributes and nested block types.
type BlockSchema struct {
	Attributes map[string]*AttributeSchema `json:"attributes,omitempty"`
	BlockTypes map[string]*NestedBlock     `json:"block_types,omitempty"`
}

// AttributeSchema says how an attribute may be set. Types and descriptions are left out: the check
// is about names and presence, and Terraform converts values.
type AttributeSchema struct {
	Required bool `json:"required,omitempty"`
	Optional bool `json:"optional,omitempty"`
	Computed bool `json:"computed,omitempty"`
}

// NestedBlock is a nested block type.
type NestedBlock struct {
	NestingMode string       `json:"nesting_mode"`
	MinItems    int          `json:"min_items,omitempty"`
	MaxItems    int          `json:"max_items,omitempty"`
	Block       *BlockSchema `json:"block"`
}

// metaArguments are what Terraform itself reads in a resource or data block, for any type.
var metaArguments = []string{"count", "for_each", "depends_on", "provider", "lifecycle", "provisioner", "connection"}

// parseFiles returns the top-level blocks of every .tf file of dir, and checks that every .tf.json
// file (the generated deployment.gen.tf.json) parses and holds only locals, which no provider
// schema governs.
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
	jsonFiles, _ := filepath.Glob(filepath.Join(dir, "*.tf.json"))
	for _, file := range jsonFiles {
		f, diags := parser.ParseJSONFile(file)
		if !diags.HasErrors() {
			_, diags = f.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "locals"}}})
		}
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s: want only locals: %w", file, diags)
		}
	}
	return blocks, nil
}

// governedBlocks reads the blocks of every .tf file of dir that a provider schema governs:
// resource, data and provider blocks, whose first label is their type.
func governedBlocks(dir string) ([]*hclsyntax.Block, error) {
	blocks, err := parseFiles(dir)
	return slices.DeleteFunc(blocks, func(b *hclsyntax.Block) bool {
		return b.Type != "resource" && b.Type != "data" && b.Type != "provider"
	}), err
}

// lookup finds the schema of a governed block in any of the providers.
func (s *ProviderSchemas) lookup(b *hclsyntax.Block) *TypeSchema {
	for addr, p := range s.Providers {
		t := map[string]*TypeSchema{"resource": p.Resources[b.Labels[0]], "data": p.DataSources[b.Labels[0]]}[b.Type]
		if b.Type == "provider" && path.Base(addr) == b.Labels[0] {
			t = p.Provider
		}
		if t != nil {
			return t
		}
	}
	return nil
}

// CheckModuleSchema checks every resource, data source and provider block of the module in dir
// against the providers' schemas: each attribute set is one the schema has and lets a module set
// (not computed-only), each required attribute is set, each nested block (static or dynamic) is a
// block type of the schema, recursively. It lists every departure.
func CheckModuleSchema(dir string, schemas *ProviderSchemas) ([]string, error) {
	blocks, err := governedBlocks(dir)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, b := range blocks {
		where := b.Type + " " + b.Labels[0] + "." + b.Labels[len(b.Labels)-1]
		t := schemas.lookup(b)
		if t == nil || t.Block == nil {
			problems = append(problems, fmt.Sprintf("%s: no such %s type in the provider schema", where, b.Type))
			continue
		}
		ignore := metaArguments
		if b.Type == "provider" {
			ignore = []string{"alias"}
		}
		problems = append(problems, checkBlock(where, b.Body, t.Block, ignore)...)
	}
	return problems, nil
}

// checkBlock checks one block body against its schema.
func checkBlock(where string, body *hclsyntax.Body, schema *BlockSchema, ignore []string) []string {
	var problems []string
	for name := range body.Attributes {
		a := schema.Attributes[name]
		switch {
		case slices.Contains(ignore, name):
		case a == nil:
			problems = append(problems, fmt.Sprintf("%s: unsupported argument %q", where, name))
		case a.Computed && !a.Optional && !a.Required:
			problems = append(problems, fmt.Sprintf("%s: %q is computed by the provider and cannot be set", where, name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(schema.Attributes)) {
		if schema.Attributes[name].Required && body.Attributes[name] == nil {
			problems = append(problems, fmt.Sprintf("%s: the required argument %q is missing", where, name))
		}
	}
	counts, dynamic := map[string]int{}, map[string]bool{}
	for _, nested := range body.Blocks {
		typ, content := nested.Type, nested.Body
		if typ == "dynamic" {
			typ, content, dynamic[nested.Labels[0]] = nested.Labels[0], nil, true
			for _, c := range nested.Body.Blocks {
				if c.Type == "content" {
					content = c.Body
				}
			}
		} else {
			counts[typ]++
		}
		if slices.Contains(ignore, typ) {
			continue
		}
		nb := schema.BlockTypes[typ]
		if nb == nil {
			problems = append(problems, fmt.Sprintf("%s: blocks of type %q are not expected here", where, typ))
			continue
		}
		if content != nil {
			problems = append(problems, checkBlock(where+"."+typ, content, nb.Block, nil)...)
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(schema.BlockTypes)) {
		nb := schema.BlockTypes[typ]
		if !dynamic[typ] && counts[typ] < nb.MinItems {
			problems = append(problems, fmt.Sprintf("%s: at least %d %q block(s) required, got %d", where, nb.MinItems, typ, counts[typ]))
		}
		if nb.MaxItems > 0 && counts[typ] > nb.MaxItems {
			problems = append(problems, fmt.Sprintf("%s: at most %d %q block(s) allowed, got %d", where, nb.MaxItems, typ, counts[typ]))
		}
	}
	return problems
}

// SchemaSubset keeps of full (the output of `terraform providers schema -json`) the provider
// blocks, resource types and data sources the modules in dirs use, whole, so that the check can run
// without the providers. It drops attribute types and descriptions (see AttributeSchema).
func SchemaSubset(full []byte, dirs ...string) ([]byte, error) {
	var all ProviderSchemas
	if err := json.Unmarshal(full, &all); err != nil {
		return nil, fmt.Errorf("provider schema: %w", err)
	}
	used := map[string]bool{} // "resource TYPE", "data TYPE", "provider NAME"
	for _, dir := range dirs {
		blocks, err := governedBlocks(dir)
		if err != nil {
			return nil, err
		}
		for _, b := range blocks {
			used[b.Type+" "+b.Labels[0]] = true
		}
	}
	for addr, p := range all.Providers {
		maps.DeleteFunc(p.Resources, func(typ string, _ *TypeSchema) bool { return !used["resource "+typ] })
		maps.DeleteFunc(p.DataSources, func(typ string, _ *TypeSchema) bool { return !used["data "+typ] })
		if !used["provider "+path.Base(addr)] {
			p.Provider = nil
		}
		if p.Provider == nil && len(p.Resources) == 0 && len(p.DataSources) == 0 {
			delete(all.Providers, addr)
		}
	}
	out, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		return nil, fmt.Errorf("provider schema subset: %w", err)
	}
	return append(out, '\n'), nil
}

// moduleMeta are the arguments of a module block that Terraform itself reads.
var moduleMeta = []string{"source", "version", "providers", "count", "for_each", "depends_on"}

// CheckModuleCalls checks every module block of the root module in dir whose source is a local
// path, as `terraform validate` would: each argument is a variable of the called module, each
// variable without a default is given, and each module.NAME.OUTPUT the root refers to is an output
// of it. It lists every departure.
func CheckModuleCalls(dir string) ([]string, error) {
	root, err := parseFiles(dir)
	if err != nil {
		return nil, err
	}
	var problems []string
	outputs := map[string][]string{}
	for _, b := range root {
		if b.Type != "module" {
			continue
		}
		name := b.Labels[0]
		source, diags := b.Body.Attributes["source"].Expr.Value(nil)
		if diags.HasErrors() || !strings.HasPrefix(source.AsString(), ".") {
			problems = append(problems, fmt.Sprintf("module %s: source is not a local path", name))
			continue
		}
		called, err := parseFiles(filepath.Join(dir, source.AsString()))
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", name, err)
		}
		required := map[string]bool{}
		for _, c := range called {
			switch c.Type {
			case "variable":
				required[c.Labels[0]] = c.Body.Attributes["default"] == nil
			case "output":
				outputs[name] = append(outputs[name], c.Labels[0])
			case "provider":
				problems = append(problems, fmt.Sprintf("module %s: declares provider %q: a child module takes its caller's providers", name, c.Labels[0]))
			}
		}
		for arg := range b.Body.Attributes {
			if _, ok := required[arg]; !ok && !slices.Contains(moduleMeta, arg) {
				problems = append(problems, fmt.Sprintf("module %s: unsupported argument %q: no such variable", name, arg))
			}
		}
		for _, v := range slices.Sorted(maps.Keys(required)) {
			if required[v] && b.Body.Attributes[v] == nil {
				problems = append(problems, fmt.Sprintf("module %s: the required variable %q is not given", name, v))
			}
		}
	}
	for _, b := range root {
		hclsyntax.VisitAll(b.Body, func(n hclsyntax.Node) hcl.Diagnostics {
			expr, ok := n.(hclsyntax.Expression)
			if !ok {
				return nil
			}
			for _, tr := range expr.Variables() {
				if tr.RootName() != "module" || len(tr) < 3 {
					continue
				}
				mod, _ := tr[1].(hcl.TraverseAttr)
				out, _ := tr[2].(hcl.TraverseAttr)
				if !slices.Contains(outputs[mod.Name], out.Name) {
					problems = append(problems, fmt.Sprintf("module.%s.%s: no such output", mod.Name, out.Name))
				}
			}
			return nil
		})
	}
	return slices.Compact(slices.Sorted(slices.Values(problems))), nil
}
