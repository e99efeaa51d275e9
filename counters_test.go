package counters

import (
	"go/parser"
	"go/token"
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
