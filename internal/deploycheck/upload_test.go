package deploycheck_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/deploycheck"
)

// TestUploadsBuild assembles exactly what each path uploads, gcloud's (.gcloudignore, as gcloud
// computes it) and Terraform's (the archive_file excludes, as the archive provider applies them),
// and builds the root package there as the buildpack does. Both leave out tests, tools and
// deployment files, and upload the same Go files.
func TestUploadsBuild(t *testing.T) {
	t.Parallel() // both mostly wait for other processes
	requireGcloud(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	viaGcloud, err := deploycheck.GcloudUpload(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	excludes, err := deploycheck.ArchiveExcludes(filepath.Join(root, "terraform"), "source")
	if err != nil {
		t.Fatal(err)
	}
	viaTerraform, err := deploycheck.ArchiveUpload(root, excludes)
	if err != nil {
		t.Fatal(err)
	}
	goFiles := map[string][]string{}
	for path, files := range map[string][]string{"gcloud": viaGcloud, "terraform": viaTerraform} {
		t.Run(path, func(t *testing.T) {
			for _, f := range files {
				local := slices.ContainsFunc([]string{"cmd/", "internal/", "scripts/", "terraform/", ".git/", "bin/"}, func(p string) bool { return strings.HasPrefix(f, p) })
				if local || strings.HasSuffix(f, "_test.go") {
					t.Errorf("%s uploads %s, which the build does not need", path, f)
				}
				if info, err := os.Stat(filepath.Join(root, f)); err != nil {
					t.Error(err)
				} else if info.Mode()&0o111 != 0 {
					t.Errorf("%s uploads %s, an executable (a binary built at the root?): add it to .gitignore, .gcloudignore and the archive's excludes, or remove it", path, f)
				}
				if strings.HasSuffix(f, ".go") || filepath.Base(f) == "go.mod" || filepath.Base(f) == "go.sum" {
					goFiles[path] = append(goFiles[path], f)
				}
			}
			if err := deploycheck.BuildUpload(ctx, root, files); err != nil {
				t.Error(err)
			}
		})
	}
	slices.Sort(goFiles["gcloud"])
	slices.Sort(goFiles["terraform"])
	if !slices.Equal(goFiles["gcloud"], goFiles["terraform"]) {
		t.Errorf("the uploads differ in Go files:\ngcloud    %q\nterraform %q", goFiles["gcloud"], goFiles["terraform"])
	}
}
