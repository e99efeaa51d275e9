package localstack_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/manifest"
	"github.com/shardcount/counters/internal/testenv"
)

// buildLocalstack compiles the command `make run` runs.
func freePort(t *testing.T) string {
	t.Helper()
	port, err := emulators.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestRunServesEverythingAndStopsCleanly is the newcomer's path: start the stack, see "ready" with
// every function's URL, increment three times, count 3, SIGTERM, and nothing is left running. The
// functions' settings pass through: with ALLOWED_ORIGINS naming the example app's origin, a preflight
// from there is answered for it, one from another origin is not.
func TestRunServesEverythingAndStopsCleanly(t *testing.T) {
	testenv.FirestoreEmulatorHost(t) // the emulators must be installed for this test to mean anything
	bin := testenv.BuildLocalstack(t)
	port, fsPort, psPort, authPort, appPort := freePort(t), freePort(t), freePort(t), freePort(t), freePort(t)
	line, stop := testenv.RunLocalstack(t, bin, append([]string{"PORT=" + port, "FIRESTORE_PORT=" + fsPort, "PUBSUB_PORT=" + psPort,
		"GOOGLE_CLOUD_PROJECT=demo-lifecycle", "LOCALSTACK_LOGS=" + t.TempDir(), "AUTH_PORT=" + authPort, "APP_PORT=" + appPort,
		"ALLOWED_ORIGINS=http://127.0.0.1:" + appPort}, localstack.OSPickedPorts...)...)
	base := "http://127.0.0.1:" + port
	for _, name := range manifest.EntryPoints {
		if !strings.Contains(line, base+"/"+name) {
			t.Errorf("ready line lacks %s: %s", base+"/"+name, line)
		}
	}

	if !strings.Contains(line, "security rules from "+os.Getenv(emulators.EnvRulesFile)+" loaded") {
		t.Errorf("ready line does not say the security rules are loaded: %s", line)
	}
	if !strings.Contains(line, " attached=none started=firestore,pubsub,auth ") {
		t.Errorf("ready line does not say it started every emulator and attached to none: %s", line)
	}
	if !strings.Contains(line, "example app: http://127.0.0.1:"+appPort+"/") {
		t.Errorf("ready line does not say where the example app is: %s", line)
	}

	for range 3 {
		resp, err := http.Post(base+"/Increment", "application/json", strings.NewReader(`{"counter":"newcomer"}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("increment: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(base + "/Count?counter=newcomer")
	if err != nil {
		t.Fatal(err)
	}
	var count struct{ Count int64 }
	_ = json.NewDecoder(resp.Body).Decode(&count)
	resp.Body.Close()
	if count.Count != 3 {
		t.Errorf("count %d after three increments, want 3", count.Count)
	}
	for origin, allowed := range map[string]bool{"http://127.0.0.1:" + appPort: true, "http://localhost:" + appPort: false} {
		req, _ := http.NewRequest(http.MethodOptions, base+"/Increment", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", http.MethodPost)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != http.StatusNoContent || (got == origin) != allowed {
			t.Errorf("preflight from %s: %d, Access-Control-Allow-Origin %q; want 204 and the origin echoed: %t", origin, resp.StatusCode, got, allowed)
		}
	}
	// The stack's own project holds clients to production's rules: shards are closed to them.
	shard := "http://127.0.0.1:" + fsPort + "/v1/projects/demo-lifecycle/databases/(default)/documents/counters/newcomer/shards/0"
	if resp, err := http.Get(shard); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("unauthenticated client read of a shard of the stack's project: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}

	if err := stop(); err != nil {
		t.Errorf("localstack after SIGTERM: %v, want exit 0", err)
	}
	for _, p := range []string{fsPort, psPort} {
		if left := processesMentioning("--port=" + p); len(left) > 0 {
			t.Errorf("emulator processes left behind on port %s: %v", p, left)
		}
	}
	for _, p := range []string{port, fsPort, psPort, authPort, appPort} {
		l, err := net.Listen("tcp", "127.0.0.1:"+p)
		if err != nil {
			t.Errorf("port %s still in use after stop: %v", p, err)
			continue
		}
		l.Close()
	}
}

// processesMentioning lists running processes whose command line contains s.
func processesMentioning(s string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte(s)) {
			found = append(found, fmt.Sprintf("%s: %s", filepath.Base(filepath.Dir(f)), bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	return found
}

// TestMissingJavaIsNamed: without Java the stack refuses to start and says what to install. It
// builds the binary, so it runs without -short only (internal/emulators checks the message under -short).
func TestMissingJavaIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (builds the localstack binary): runs in `make test`, or go test without -short")
	}
	bin := testenv.BuildLocalstack(t)
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), emulators.NoHostEnvs()...), "PATH="+t.TempDir(), "LOCALSTACK_LOGS="+t.TempDir(),
		"PORT="+freePort(t), "FIRESTORE_PORT="+freePort(t), "PUBSUB_PORT="+freePort(t))
	cmd.Env = append(cmd.Env, localstack.OSPickedPorts...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("localstack started without Java on PATH: %s", out)
	}
	if !strings.Contains(string(out), "Java 17") || !strings.Contains(string(out), "install") {
		t.Errorf("message does not say to install Java 17: %s", out)
	}
}

// TestTakenFunctionsPortIsNamed: with PORT taken (say by an attached emulator on 8080), the stack
// refuses to start, naming PORT, rather than let that server answer for the functions.
func TestTakenFunctionsPortIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("slow (builds the localstack binary): runs in `make test`, or go test without -short")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	cmd := exec.Command(testenv.BuildLocalstack(t))
	cmd.Env = append(append(append(os.Environ(), emulators.NoHostEnvs()...), "PORT="+port, "LOCALSTACK_LOGS="+t.TempDir()), localstack.OSPickedPorts...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "PORT "+port) || !strings.Contains(string(out), "set PORT") {
		t.Errorf("localstack with PORT %s taken: %v, %s; want it to refuse, naming PORT", port, err, out)
	}
}
