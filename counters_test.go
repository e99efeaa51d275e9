package counters

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRootFolderHoldsOneDeployablePackage guards the Go buildpack's rule: gcloud builds only the root
// package, by import path, and refuses a root folder with more than one package name (an external
// _test package included) or package main.
func TestRootFolderHoldsOneDeployablePackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in the root folder: %v", err)
	}
	imports := map[string]string{}
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		if name := parsed.Name.Name; name != "counters" {
			t.Errorf("%s is in package %s; every root file must be in package counters", f, name)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			name := ""
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[path] = name
		}
	}
	// The deployed binary serves what is registered: the framework and the registering package must be
	// imported by the root package itself.
	for _, want := range []string{
		"github.com/GoogleCloudPlatform/functions-framework-go/functions",
		"github.com/shardcount/counters/functions",
	} {
		if _, ok := imports[want]; !ok {
			t.Errorf("the root package does not import %s", want)
		}
	}
}

// TestDeployedCodeImportsNothingInternal guards the rule that internal/ packages are local-only (the
// local stack, tests, the load harness): the deployed root package must not depend on any, wherever
// it sits, so local instrumentation never reaches production and the uploads, which leave internal/
// out, always build.
func TestDeployedCodeImportsNothingInternal(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/shardcount/counters/") && slices.Contains(strings.Split(pkg, "/"), "internal") {
			t.Errorf("the deployed package depends on %s; internal packages are for local use only", pkg)
		}
	}
}

// TestOnlyTheSupportedPackagesOmitTheNotice: every importable package (outside internal/, not a
// command) other than the root, client/ and publisher/ says in its doc that it is no supported import.
func TestOnlyTheSupportedPackagesOmitTheNotice(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}} {{.Doc}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	const module = "github.com/shardcount/counters"
	supported := []string{module, module + "/publisher"} // client/ is a module of its own
	for line := range strings.Lines(string(out)) {
		path, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		name, _, _ := strings.Cut(rest, " ")
		if name == "main" || strings.Contains(path+"/", "/internal/") || slices.Contains(supported, path) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(strings.TrimPrefix(path, module), "/"), "*.go"))
		if !anyFileSays(t, files, "Not a supported import") {
			t.Errorf("package %s: its doc must say \"Not a supported import: see package counters.\"", path)
		}
	}
}

// anyFileSays reports whether one of files contains text, in any case.
func anyFileSays(t *testing.T, files []string, text string) bool {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.ToLower(string(b)), strings.ToLower(text)) {
			return true
		}
	}
	return false
}
