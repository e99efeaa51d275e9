package version_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/testenv"
	"github.com/shardcount/counters/version"
)

// releaseHeading is a release's heading in CHANGELOG.md (Keep a Changelog): "## [0.10.0] - 2026-11-24".
var releaseHeading = regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\] - (\d{4}-\d{2}-\d{2})$`)

// semver is a semantic version without its "v".
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?$`)

// releases are CHANGELOG.md's releases, newest first.
func releases(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []string
	for _, m := range releaseHeading.FindAllStringSubmatch(string(b), -1) {
		vs = append(vs, m[1])
	}
	if len(vs) < 2 {
		t.Fatalf("CHANGELOG.md lists releases %q: want this one and the one before", vs)
	}
	return vs
}

// TestReleaseNamesAgree: the Go version, CHANGELOG.md's top release and what deploy.sh --version
// prints are one semantic version; operations.md's upgrade steps go from the previous release to it.
func TestReleaseNamesAgree(t *testing.T) {
	if !semver.MatchString(version.Version) {
		t.Errorf("version.Version %q is no semantic version", version.Version)
	}
	vs := releases(t)
	if vs[0] != version.Version {
		t.Errorf("CHANGELOG.md's top release is %s, version.Version %s", vs[0], version.Version)
	}
	section := upgradeSection(t)
	label := "v" + strings.ReplaceAll(version.Version, ".", "-")
	release := func(v string) string { return `"$(release ` + v + `)"` }
	for _, want := range []string{"git checkout " + release(version.Version), "git diff " + release(vs[1]) + " " + release(version.Version),
		"git checkout " + release(vs[1]), "counters_version=" + label} {
		if !strings.Contains(section, want) {
			t.Errorf("operations.md, \"Upgrading and rolling back\": no %q (from %s to %s)", want, vs[1], version.Version)
		}
	}
	testenv.RequireTool(t, "bash", "deploy.sh is a bash script (Debian package bash)")
	out, err := exec.Command("bash", filepath.Join("..", "scripts", "deploy.sh"), "--version").Output()
	if err != nil {
		t.Fatalf("deploy.sh --version: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != version.Version {
		t.Errorf("deploy.sh --version prints %q, version.Version is %s (go generate ./... writes deployment.gen.sh)", got, version.Version)
	}
}

// TestUpgradeCommandsParse runs every gcloud command of operations.md's "Upgrading and rolling back"
// through the installed gcloud's parser.
func TestUpgradeCommandsParse(t *testing.T) {
	testenv.SkipIfShort(t, "gcloud")
	commands, _ := deploycheck.MarkdownGcloudCommands(upgradeSection(t))
	if len(commands) < 5 {
		t.Fatalf("found %d gcloud commands, want the checks of every step", len(commands))
	}
	refused, err := deploycheck.GcloudParses(context.Background(), commands)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refused {
		t.Error(r)
	}
}

// upgradeSection is operations.md's "Upgrading and rolling back", up to its next section.
func upgradeSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Upgrading and rolling back\n")
	if !ok {
		t.Fatal("docs/operations.md has no section \"Upgrading and rolling back\"")
	}
	section, _, _ := strings.Cut(after, "\n### ")
	return section
}

// TestWebClientPackageIsTheRelease: the web client's package.json (what npm pack publishes) carries
// this release's version.
func TestWebClientPackageIsTheRelease(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "web", "client", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Version != version.Version {
		t.Errorf("web/client/package.json's version is %q, version.Version %s", pkg.Version, version.Version)
	}
}
