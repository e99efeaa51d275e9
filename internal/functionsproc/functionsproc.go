// Package functionsproc starts local-stack functions processes with test-specific settings.
package functionsproc

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/testenv"
)

// Start serves every entry point on a free local port with settings (NAME=VALUE) added to the
// environment, and returns its URL once it serves. The process dies with t; it logs if t failed.
func Start(t testing.TB, settings ...string) string {
	t.Helper()
	port, err := emulators.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	url := "http://127.0.0.1:" + port
	cmd := exec.Command(testenv.BuildLocalstack(t), localstack.ServeFunctionsCommand)
	cmd.Env = append(append(os.Environ(), "PORT="+port, "LOCAL_ONLY=true"), settings...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("functions process with %q:\n%s", settings, logs.String())
		}
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(url + "/" + functions.EntryCount); err == nil {
			resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("the functions process did not serve within a minute\n%s", logs.String())
		}
	}
}
