package deploycheck

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/zclconf/go-cty/cty"
)

// GcloudUpload lists the files `gcloud functions deploy --source=root` uploads, as gcloud itself
// computes them from .gcloudignore (`gcloud meta list-files-for-upload`), relative to root.
func GcloudUpload(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "gcloud", "meta", "list-files-for-upload", ".")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gcloud meta list-files-for-upload: %w", err)
	}
	return strings.Fields(string(out)), nil
}

// ArchiveUpload lists the files the hashicorp/archive provider zips from dir with these excludes, as
// its zip archiver (v2.8.0) decides: every path relative to dir is matched against every pattern
// with doublestar.PathMatch, and a matching directory is skipped whole.
func ArchiveUpload(dir string, excludes []string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		excluded := false
		for _, pattern := range excludes {
			if pattern == "" {
				continue
			}
			match, err := doublestar.PathMatch(filepath.FromSlash(pattern), rel)
			if err != nil {
				return fmt.Errorf("exclude %q: %w", pattern, err)
			}
			excluded = excluded || match
		}
		switch {
		case entry.IsDir() && excluded:
			return filepath.SkipDir
		case !entry.IsDir() && !excluded:
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", dir, err)
	}
	return files, nil
}

// ArchiveExcludes returns the excludes of the module's archive_file data source named name: a
// literal list of strings (one that cannot be evaluated without the module is an error, not an
// archive of everything).
func ArchiveExcludes(dir, name string) ([]string, error) {
	blocks, err := parseFiles(dir)
	if err != nil {
		return nil, err
	}
	for _, b := range blocks {
		if b.Type != "data" || b.Labels[0] != "archive_file" || b.Labels[1] != name {
			continue
		}
		where := fmt.Sprintf("data.archive_file.%s in %s", name, dir)
		a, ok := b.Body.Attributes["excludes"]
		if !ok {
			return nil, fmt.Errorf("%s: no excludes", where)
		}
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() || !v.CanIterateElements() {
			return nil, fmt.Errorf("%s: excludes is not a literal list: %v", where, diags)
		}
		var excludes []string
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.Type() != cty.String {
				return nil, fmt.Errorf("%s: an exclude is not a string", where)
			}
			excludes = append(excludes, e.AsString())
		}
		return excludes, nil
	}
	return nil, fmt.Errorf("no data.archive_file.%s in %s", name, dir)
}

// BuildUpload copies files (relative to root) into a new directory and builds its root package
// there with the go command, as the Go buildpack does with an upload: only what was uploaded is
// there, modules come from go.mod and go.sum. It returns the build's output on failure.
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
	// GOFLAGS=-mod=mod: like the buildpack, take what go.mod asks for, without a vendor folder.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build . of the upload: %w\n%s", err, out)
	}
	return nil
}

func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return dst.Close()
}
