package clientstack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// MaxClientModules bounds the distinct modules in `go mod graph` of a module that uses the client
// (docs/api.md, "Go client"): google.golang.org/api's option and idtoken, and what their go.mod
// files require, measured at 70 with google.golang.org/api v0.304.0. The functions' graph (Firestore,
// Pub/Sub, the functions framework, CloudEvents) took it to 97 when the client was a package of the
// root module.
const MaxClientModules = 75

// TestImportsNoneOfTheFunctionsDependencies: a backend importing the client builds none of what
// only the functions need (Firestore, the functions framework, CloudEvents, the Firebase Admin SDK,
// Pub/Sub, the project's own packages).
func TestImportsNoneOfTheFunctionsDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/shardcount/counters/client").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{"cloud.google.com/go/firestore", "cloud.google.com/go/pubsub", "github.com/GoogleCloudPlatform/functions-framework-go",
		"github.com/cloudevents/", "firebase.google.com/", "go.uber.org/zap"}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/shardcount/counters") && p != "github.com/shardcount/counters/client" {
			t.Errorf("client depends on %s", p)
		}
		for _, f := range forbidden {
			if strings.HasPrefix(p, f) {
				t.Errorf("client depends on %s", p)
			}
		}
	}
}

// TestModuleGraphOfAClientUser: a scratch module whose program calls client.New, tidied outside
// this workspace, has at most MaxClientModules distinct modules in `go mod graph`.
func TestModuleGraphOfAClientUser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: go mod tidy of a scratch module may download modules")
	}
	clientDir, err := filepath.Abs(filepath.Join("..", "..", "client"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module scratch\n\ngo 1.26.0\n\nrequire github.com/shardcount/counters/client v0.0.0\n\n" +
			"replace github.com/shardcount/counters/client => " + clientDir + "\n",
		"main.go": `package main

import (
	"context"
	"log"

	"google.golang.org/api/option"

	"github.com/shardcount/counters/client"
)

func main() {
	c, err := client.New(context.Background(), option.WithEndpoint("http://127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	n, err := c.Count(context.Background(), "likes")
	log.Println(n, err)
}
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return string(out)
	}
	goCmd("mod", "tidy")
	goCmd("build", "-o", os.DevNull, ".")
	modules := map[string]bool{}
	for _, f := range strings.Fields(goCmd("mod", "graph")) {
		path, _, _ := strings.Cut(f, "@")
		modules[path] = true
	}
	for _, forbidden := range []string{"github.com/shardcount/counters", "cloud.google.com/go/firestore", "cloud.google.com/go/pubsub/v2",
		"github.com/GoogleCloudPlatform/functions-framework-go", "github.com/cloudevents/sdk-go/v2"} {
		if modules[forbidden] {
			t.Errorf("the graph holds %s", forbidden)
		}
	}
	if len(modules) > MaxClientModules {
		t.Errorf("go mod graph of a client user holds %d modules, more than MaxClientModules (%d)", len(modules), MaxClientModules)
	}
	t.Logf("%d modules in the graph", len(modules))
}
