package testenv

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildLocalstack builds the local stack's binary (cmd/localstack) into a directory of t's and
// returns its path, for tests that start their own stack or functions process.
func BuildLocalstack(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "localstack")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/shardcount/counters/cmd/localstack").CombinedOutput()
	if err != nil {
		t.Fatalf("build localstack: %v\n%s", err, out)
	}
	return bin
}
