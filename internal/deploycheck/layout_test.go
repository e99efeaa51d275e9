package deploycheck_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/shardcount/counters/internal/deploycheck"
)

// repoPackage is a Go package of the repository, as go list describes it.
type repoPackage struct {
	ImportPath, Dir string
	GoFiles         []string
	// rel is Dir relative to the repository, "." for the root package.
	rel string
	// deployed: the root package or one it imports, which the uploads must hold.
	deployed bool
}

// repoPackages lists every Go package of the repository, marking those the deployed root package
// needs (go list -deps .).
func repoPackages(t *testing.T) []repoPackage {
	t.Helper()
	pkgs, err := listRepoPackages()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// listRepoPackages runs go list once per test binary for repoPackages.
var listRepoPackages = sync.OnceValues(func() ([]repoPackage, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	list := exec.Command("go", "list", "-json", "./...")
	list.Dir = abs
	out, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./...: %w", err)
	}
	deps := exec.Command("go", "list", "-deps", ".")
	deps.Dir = abs
	depsOut, err := deps.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps .: %w", err)
	}
	deployed := strings.Fields(string(depsOut))
	var pkgs []repoPackage
	for dec := json.NewDecoder(strings.NewReader(string(out))); dec.More(); {
		var p repoPackage
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(abs, p.Dir)
		if err != nil {
			return nil, err
		}
		p.rel, p.deployed = filepath.ToSlash(rel), slices.Contains(deployed, p.ImportPath)
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		return nil, fmt.Errorf("go list ./... found %d packages, want the repository's", len(pkgs))
	}
	return pkgs, nil
})

// TestLayoutListsEveryPackage: the layout listing of docs/development.md names the directory of
// every Go package of the repository (the root package by its file, counters.go).
func TestLayoutListsEveryPackage(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(text), "\n## Layout\n")
	_, block, ok2 := strings.Cut(section, "```\n")
	block, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/development.md: no code block under ## Layout")
	}
	listed := map[string]bool{}
	for line := range strings.SplitSeq(block, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && !strings.HasPrefix(line, " ") {
			listed[strings.TrimSuffix(fields[0], "/")] = true
		}
	}
	for _, p := range repoPackages(t) {
		name := p.rel
		if name == "." {
			name = "counters.go"
		}
		if !listed[name] {
			t.Errorf("docs/development.md, ## Layout: package %s is not listed (a line starting %s/)", p.ImportPath, name)
		}
	}
}

// ignorePattern is one pattern of .gcloudignore (gitignore syntax, without includes).
type ignorePattern struct {
	glob     string
	negated  bool // a leading !: a match includes
	dirOnly  bool // a trailing /: matches directories only
	anchored bool // a / before the end: matched against the path from the root, not a name
}

// gcloudIgnore reads .gcloudignore's patterns, failing t on syntax this check does not know.
func gcloudIgnore(t *testing.T) (patterns []ignorePattern, comment string) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".gcloudignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "#!include"):
			t.Fatalf(".gcloudignore: %q: this check does not know includes; teach it", line)
		case strings.HasPrefix(line, "#"):
			comment += line + "\n"
			continue
		case line == "":
			continue
		}
		p := ignorePattern{negated: strings.HasPrefix(line, "!")}
		glob := strings.TrimPrefix(line, "!")
		p.dirOnly = strings.HasSuffix(glob, "/")
		glob = strings.TrimSuffix(glob, "/")
		p.anchored = strings.Contains(glob, "/")
		p.glob = strings.TrimPrefix(glob, "/")
		patterns = append(patterns, p)
	}
	return patterns, comment
}

// ignored reports whether gcloud leaves rel (a path relative to the root, a directory when dir)
// out of the upload, as gcloud decides (googlecloudsdk/command_lib/util/gcloudignore.py): the last
// pattern matching the path or one of its parent directories ignores it.
func ignored(patterns []ignorePattern, rel string, dir bool) bool {
	parts := strings.Split(rel, "/")
	for i := range parts {
		prefix, isDir := strings.Join(parts[:i+1], "/"), dir || i < len(parts)-1
		ignore := false
		for _, p := range patterns {
			subject := parts[i]
			if p.anchored {
				subject = prefix
			}
			if match, _ := doublestar.Match(p.glob, subject); match && (isDir || !p.dirOnly) {
				ignore = !p.negated
			}
		}
		if ignore {
			return true
		}
	}
	return false
}

// TestTheModuleFindsItsSourceWhereverItIsInstalled: a root module that calls ours with an absolute
// or git source gets it under .terraform/modules/NAME (a link to the folder, or a copy of the
// repository), whose parent is not the repository; the archive still holds the same files, found
// through the link terraform/source.
func TestTheModuleFindsItsSourceWhereverItIsInstalled(t *testing.T) {
	inPlace, err := deploycheck.ArchiveFiles(filepath.Join(root, "terraform"), "source")
	if err != nil || !slices.Contains(inPlace, "go.mod") {
		t.Fatalf("the module in place archives %q (%v), want the repository's files", inPlace, err)
	}
	installed := filepath.Join(t.TempDir(), ".terraform", "modules", "counters")
	if err := os.MkdirAll(filepath.Dir(installed), 0o755); err != nil {
		t.Fatal(err)
	}
	module, err := filepath.Abs(filepath.Join(root, "terraform"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(module, installed); err != nil {
		t.Fatal(err)
	}
	viaLink, err := deploycheck.ArchiveFiles(installed, "source")
	if err != nil || !slices.Equal(viaLink, inPlace) {
		t.Errorf("the module installed from an absolute source archives %d files (%v), want the %d of the repository", len(viaLink), err, len(inPlace))
	}
}

// TestUploadsHoldExactlyTheDeployedPackages: .gcloudignore, an allow-list, leaves out every Go
// package the deployed root package does not import and none of the Go files of those it does; the
// Terraform archive's local.source_files agree.
// (TestUploadsBuild checks the same with gcloud itself, without -short.)
func TestUploadsHoldExactlyTheDeployedPackages(t *testing.T) {
	patterns, _ := gcloudIgnore(t)
	archived, err := deploycheck.ArchiveFiles(filepath.Join(root, "terraform"), "source")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range repoPackages(t) {
		if !p.deployed {
			if !ignored(patterns, p.rel, true) {
				t.Errorf(".gcloudignore: package %s is uploaded, but the deployed package does not import it: take out !/%s/", p.ImportPath, p.rel)
			}
			for _, f := range p.GoFiles {
				if slices.Contains(archived, path.Join(p.rel, f)) {
					t.Errorf("terraform/functions.tf: the archive holds %s, of a package the deployed package does not import: take %s out of local.source_packages", path.Join(p.rel, f), p.rel)
				}
			}
			continue
		}
		for _, f := range p.GoFiles {
			file := path.Join(p.rel, f)
			if ignored(patterns, file, false) {
				t.Errorf(".gcloudignore leaves out %s, which the deployed package needs", file)
			}
			if !slices.Contains(archived, file) {
				t.Errorf("terraform/functions.tf: the archive leaves out %s, which the deployed package needs", file)
			}
		}
	}
}
