package deploycheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// TestModulePinsAreTaggedOrExplained: every requirement of go.mod is a tagged release, or a
// pseudo-version with the reason beside it ("// indirect; untagged: why").
func TestModulePinsAreTaggedOrExplained(t *testing.T) {
	path := filepath.Join(root, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if !module.IsPseudoVersion(r.Mod.Version) {
			continue
		}
		var why string
		for _, c := range r.Syntax.Suffix {
			_, why, _ = strings.Cut(c.Token, "untagged:")
		}
		if strings.TrimSpace(why) == "" {
			t.Errorf("go.mod: %s %s is not a tagged release: pin a tagged one, or say why beside it (// untagged: ...)", r.Mod.Path, r.Mod.Version)
		}
	}
}
