package deploycheck_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/deploycheck"
)

// strays are files no upload may take: keys and environment files left in the repository.
var strays = []string{"sa-key.json", ".env", "functions/sa-key.json", "counter/.env", "functions/config/key.pem"}

// repoWithStrays copies the repository's files (tracked, or new and not ignored) into a new
// directory and adds the strays.
func repoWithStrays(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dir := t.TempDir()
	for _, f := range append(strings.Fields(string(out)), strays...) {
		if link, err := os.Readlink(filepath.Join(root, f)); err == nil { // terraform/source
			if err := os.Symlink(link, filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			data = []byte("secret (test)") // a stray, or a file deleted but not yet staged
		} else if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestUploadsBuild assembles exactly what each path uploads, gcloud's (.gcloudignore, as gcloud
// computes it) and Terraform's (local.source_files, as Terraform evaluates it), from a copy of the
// repository with stray key and .env files in it, and builds the root package there as the buildpack
// does. Both are allow-lists: they leave out the strays, tests, tools and deployment files, and
// upload the same files.
func TestUploadsBuild(t *testing.T) {
	t.Parallel() // both mostly wait for other processes
	requireGcloud(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	repo := repoWithStrays(t)
	viaGcloud, err := deploycheck.GcloudUpload(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	viaTerraform, err := deploycheck.ArchiveFiles(filepath.Join(repo, "terraform"), "source")
	if err != nil {
		t.Fatal(err)
	}
	for path, files := range map[string][]string{"gcloud": viaGcloud, "terraform": viaTerraform} {
		t.Run(path, func(t *testing.T) {
			for _, f := range files {
				local := slices.ContainsFunc([]string{"cmd/", "internal/", "scripts/", "terraform/", ".git/", "bin/"}, func(p string) bool { return strings.HasPrefix(f, p) })
				if local || strings.HasSuffix(f, "_test.go") || slices.Contains(strays, f) {
					t.Errorf("%s uploads %s, which the build does not need", path, f)
				}
				if info, err := os.Stat(filepath.Join(root, f)); err == nil && info.Mode()&0o111 != 0 { // the copy's modes are 0644
					t.Errorf("%s uploads %s, an executable (a binary built at the root?): remove it", path, f)
				}
			}
			if err := deploycheck.BuildUpload(ctx, repo, files); err != nil {
				t.Error(err)
			}
		})
	}
	slices.Sort(viaGcloud)
	slices.Sort(viaTerraform)
	if !slices.Equal(viaGcloud, viaTerraform) {
		t.Errorf("the uploads differ:\ngcloud    %q\nterraform %q", viaGcloud, viaTerraform)
	}
}
