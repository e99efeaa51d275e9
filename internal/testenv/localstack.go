package testenv

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildLocalstack builds cmd/localstack into t's temporary directory and returns its path.
func BuildLocalstack(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "localstack")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/shardcount/counters/cmd/localstack").CombinedOutput()
	if err != nil {
		t.Fatalf("build localstack: %v\n%s", err, out)
	}
	return bin
}
