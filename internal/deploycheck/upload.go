package deploycheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// GcloudUpload lists the files, relative to root, that gcloud uploads from root.
func GcloudUpload(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "gcloud", "meta", "list-files-for-upload", ".")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gcloud meta list-files-for-upload: %w", err)
	}
	return strings.Fields(string(out)), nil
}

// ArchiveFiles lists the files the module in dir zips into data.archive_file.name, evaluating
// local.source_files with var.source_dir unset (the module's parent); the archive must take only
// those.
func ArchiveFiles(dir, name string) ([]string, error) {
	blocks, err := parseFiles(dir)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("data.archive_file.%s in %s", name, dir)
	locals := map[string]hcl.Expression{}
	archived := false
	for _, b := range blocks {
		switch {
		case b.Type == "locals":
			for n, a := range b.Body.Attributes {
				locals[n] = a.Expr
			}
		case b.Type == "data" && b.Labels[0] == "archive_file" && b.Labels[1] == name:
			for _, a := range []string{"source_dir", "source_file", "source_content", "excludes"} {
				if b.Body.Attributes[a] != nil {
					return nil, fmt.Errorf("%s: %s zips more than local.source_files", where, a)
				}
			}
			for _, d := range b.Body.Blocks {
				forEach := d.Body.Attributes["for_each"]
				archived = archived || d.Type == "dynamic" && d.Labels[0] == "source" && forEach != nil && isLocal(forEach.Expr, "source_files")
			}
		}
	}
	if !archived {
		return nil, fmt.Errorf("%s: no dynamic \"source\" over local.source_files", where)
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(dir)}),
			"var": cty.ObjectVal(map[string]cty.Value{"source_dir": cty.NullVal(cty.String)})},
		Functions: map[string]function.Function{"sort": stdlib.SortFunc, "concat": stdlib.ConcatFunc, "flatten": stdlib.FlattenFunc,
			"tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)), "length": stdlib.LengthFunc, "regexall": stdlib.RegexAllFunc,
			"fileset": filesetFunc, "fileexists": FileExistsFunc},
	}
	values := map[string]cty.Value{}
	for _, n := range []string{"source_root", "source_packages", "source_files"} {
		if locals[n] == nil {
			return nil, fmt.Errorf("%s: no local.%s", where, n)
		}
		ctx.Variables["local"] = cty.ObjectVal(values)
		v, diags := locals[n].Value(ctx)
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s: local.%s: %w", where, n, diags)
		}
		values[n] = v
	}
	var files []string
	for it := values["source_files"].ElementIterator(); it.Next(); {
		_, f := it.Element()
		files = append(files, f.AsString())
	}
	return files, nil
}

// isLocal says whether expr is local.name.
func isLocal(expr hclsyntax.Expression, name string) bool {
	t, ok := expr.(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(t.Traversal) != 2 || t.Traversal.RootName() != "local" {
		return false
	}
	attr, ok := t.Traversal[1].(hcl.TraverseAttr)
	return ok && attr.Name == name
}

// FileExistsFunc is Terraform's fileexists(path): whether path, cleaned as Terraform cleans it
// (lexically: a/link/.. is a), is a regular file.
var FileExistsFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}},
	Type:   function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		info, err := os.Stat(filepath.Clean(args[0].AsString()))
		return cty.BoolVal(err == nil && info.Mode().IsRegular()), nil
	},
})

// filesetFunc is Terraform's fileset(path, pattern): the files under path, cleaned as Terraform
// cleans it, matching pattern.
var filesetFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}, {Name: "pattern", Type: cty.String}},
	Type:   function.StaticReturnType(cty.Set(cty.String)),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		matches, err := doublestar.Glob(os.DirFS(filepath.Clean(args[0].AsString())), args[1].AsString(), doublestar.WithFilesOnly())
		if err != nil {
			return cty.NilVal, fmt.Errorf("fileset %q: %w", args[1].AsString(), err)
		}
		if len(matches) == 0 {
			return cty.SetValEmpty(cty.String), nil
		}
		vals := make([]cty.Value, len(matches))
		for i, m := range matches {
			vals[i] = cty.StringVal(m)
		}
		return cty.SetVal(vals), nil
	},
})

// BuildUpload builds files (relative to root) alone in a new directory, as the Go buildpack does;
// the error holds the build's output.
func BuildUpload(ctx context.Context, root string, files []string) error {
	dir, err := os.MkdirTemp("", "upload-")
	if err != nil {
		return fmt.Errorf("upload dir: %w", err)
	}
	defer os.RemoveAll(dir)
	for _, f := range files {
		if err := copyFile(filepath.Join(root, f), filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", os.DevNull, ".")
	cmd.Dir = dir
	// Like the buildpack: modules from go.mod, no vendor folder.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build . of the upload: %w\n%s", err, out)
	}
	return nil
}

// copyFile copies from to to, making to's folder.
func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(to), 0o755)
	}
	if err == nil {
		err = os.WriteFile(to, data, 0o644)
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return nil
}
