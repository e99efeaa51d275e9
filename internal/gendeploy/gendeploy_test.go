package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/manifest"
)

// TestGeneratedFilesAreCurrent: every committed generated file is what the generator writes from
// today's declarations.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := Render(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Outputs {
		committed, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, files[name]) {
			t.Errorf("%s is stale: run `go generate ./...` and commit the result", name)
		}
	}
}

// TestCheckIAMRefusesWhatNoPathCanApply: a role of an undeclared account, an unknown gate, a
// condition with an unknown placeholder, a gated repository role or other than one, and an API
// gated by an unknown setting are refused; the declarations pass.
func TestCheckIAMRefusesWhatNoPathCanApply(t *testing.T) {
	accounts, roles, apis := manifest.Accounts(), manifest.Roles(), manifest.APIs()
	if err := checkIAM(accounts, roles, apis); err != nil {
		t.Fatal(err)
	}
	repository := slices.IndexFunc(roles, func(r manifest.Role) bool { return r.OnRepository })
	with := func(change func(r *manifest.Role)) []manifest.Role {
		changed := slices.Clone(roles)
		change(&changed[0])
		return changed
	}
	for name, c := range map[string]struct {
		roles []manifest.Role
		apis  []manifest.API
		want  string
	}{
		"account":       {with(func(r *manifest.Role) { r.Account = "nobody" }), apis, `account "nobody" is not declared`},
		"gate":          {with(func(r *manifest.Role) { r.Setting = "NO_SUCH_SETTING" }), apis, "NO_SUCH_SETTING is not a setting"},
		"placeholder":   {with(func(r *manifest.Role) { r.Condition = &manifest.Condition{Resource: "projects/{projekt}"} }), apis, "placeholders only of"},
		"two on repo":   {append(slices.Clone(roles), manifest.Role{Account: "build", Role: "r", OnRepository: true}), apis, "2 roles on the repository"},
		"none on repo":  {slices.Delete(slices.Clone(roles), repository, repository+1), apis, "0 roles on the repository"},
		"gated on repo": {append(slices.Delete(slices.Clone(roles), repository, repository+1), manifest.Role{Account: "build", Role: "r", OnRepository: true, Setting: "CHECK_REVOKED_TOKENS"}), apis, "want neither setting nor condition"},
		"api gate":      {roles, append(slices.Clone(apis), manifest.API{Name: "x.googleapis.com", Setting: "NO_SUCH_SETTING"}), "API x.googleapis.com: NO_SUCH_SETTING"},
	} {
		if err := checkIAM(accounts, c.roles, c.apis); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}

// TestCheckDeclarationsRefusesPartDaysOfDeadLetters: deploy.sh gives gcloud the dead-letter
// retention in days, so a retention of part of a day is refused; the declaration passes.
func TestCheckDeclarationsRefusesPartDaysOfDeadLetters(t *testing.T) {
	declared := manifest.DeadLetters.Retention
	t.Cleanup(func() { manifest.DeadLetters.Retention = declared })
	if err := checkDeclarations(); err != nil {
		t.Fatal(err)
	}
	manifest.DeadLetters.Retention = 36 * time.Hour
	if err := checkDeclarations(); err == nil || !strings.Contains(err.Error(), "whole days") {
		t.Errorf("retention 36h: %v, want an error asking for whole days", err)
	}
}
