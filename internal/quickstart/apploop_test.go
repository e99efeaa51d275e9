package quickstart

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"google.golang.org/api/option"

	"github.com/shardcount/counters/client"
	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/emulators"
	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/internal/testenv"
)

// The page's example addresses, which the test replaces with free ports of its own.
const (
	pageFirestore = "127.0.0.1:8080"
	pageAuth      = "127.0.0.1:9099"
	pagePort      = "PORT=8088"
)

// TestAppEmulatorSuiteLoop runs existing-app.md's "Beside the app's Emulator Suite" lines in an app's
// folder (its firebase.json, rules composed by make rules, counter-sources.json): seed likes are
// exported by firebase-tools' own emulators and imported with the page's `firebase emulators:start`
// line; the page's make run line attaches the counters (the ready line says what it attached to and
// started); its backfill line counts the seed; then new likes written by the JS SDK as the app's
// rules allow, and the roll-ups the app's page listens to from the same emulator, show every post's
// likes exactly, as does Count. Stopped, the counters leave the app's emulator running.
func TestAppEmulatorSuiteLoop(t *testing.T) {
	testenv.RequireTool(t, "node", "install Node.js 20 or later (.ci/run does)")
	testenv.RequireTool(t, "bash", "the page's lines are bash lines (Debian package bash)")
	code := existingAppCode(t)
	firebaseLine := linesStarting(t, code, "firebase emulators:start ")[0]
	var runLine, backfillLine string
	for _, line := range linesStarting(t, code, "FIRESTORE_EMULATOR_HOST="+pageFirestore+" ") {
		switch {
		case strings.HasSuffix(line, " make run"):
			runLine = line
		case strings.Contains(line, " go run ./cmd/sources backfill "):
			backfillLine = line
		}
	}
	if runLine == "" || backfillLine == "" {
		t.Fatalf("%s: want a FIRESTORE_EMULATOR_HOST=%s ... make run line and a ... go run ./cmd/sources backfill line", existingApp, pageFirestore)
	}
	args, err := deploycheck.SplitWords(strings.TrimPrefix(firebaseLine, "firebase "))
	if err != nil {
		t.Fatal(err)
	}
	project := args[len(args)-1]
	if args[len(args)-2] != "--project" || !strings.HasPrefix(project, "demo-") {
		t.Fatalf("%s: want it to end in --project demo-...", firebaseLine)
	}

	ports, err := emulators.FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	firestoreAddr, authAddr := "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1]
	app := filepath.Join(t.TempDir(), "my-app")
	firebaseJSON := fmt.Sprintf(`{"firestore": {"rules": "firestore.rules"}, "emulators": {
  "firestore": {"host": "127.0.0.1", "port": %s, "websocketPort": %s}, "auth": {"host": "127.0.0.1", "port": %s},
  "hub": {"host": "127.0.0.1", "port": %s}, "logging": {"host": "127.0.0.1", "port": %s}, "ui": {"enabled": false}}}`,
		ports[0], ports[2], ports[1], ports[3], ports[4])
	for name, content := range map[string]string{
		"firebase.json":        firebaseJSON,
		"firestore.rules":      readRepoFile(t, "firestore.example-app.rules"), // the example app's, composed by make rules
		"counter-sources.json": `[{"documents": "posts/{post}/likes/{uid}", "counter": "likes-{post}"}]`,
	} {
		if err := os.MkdirAll(app, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(app, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The app's seed: likes of p1 and p2 and a note, exported by its emulators on exit.
	seeding := startFirebase(t, app, firestoreAddr, "emulators:start", "--only", "firestore", "--project", project, "--export-on-exit", "seed")
	seed := map[string]int{"p1": 3, "p2": 2}
	t.Setenv("FIRESTORE_EMULATOR_HOST", firestoreAddr)
	db, err := firestore.NewClient(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	batch := db.Batch()
	batch.Set(db.Doc("notes/n1"), map[string]any{"text": "the app's own"})
	for post, n := range seed {
		for i := range n {
			batch.Set(db.Doc(fmt.Sprintf("posts/%s/likes/seed-%d", post, i)), map[string]any{"at": time.Now()})
		}
	}
	if _, err := batch.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if err := seeding(); err != nil {
		t.Fatalf("export the seed: %v", err)
	}

	stopFirebase := startFirebase(t, app, firestoreAddr, args...)
	pageLine := func(line string) string {
		return strings.NewReplacer(pageFirestore, firestoreAddr, pageAuth, authAddr, pagePort, "PORT="+ports[5], myApp, app+"/").Replace(line)
	}
	env, err := deploycheck.SplitWords(strings.TrimSuffix(pageLine(runLine), " make run"))
	if err != nil {
		t.Fatal(err)
	}
	ready, stopStack := testenv.RunLocalstack(t, testenv.BuildLocalstack(t),
		append(append(env, "PUBSUB_PORT="+ports[6], "APP_PORT="+ports[7], "LOCALSTACK_LOGS="+t.TempDir()), localstack.OSPickedPorts...)...)
	for _, want := range []string{" firestore=" + firestoreAddr + " (its security rules left as they are) ", " attached=firestore,auth started=pubsub "} {
		if !strings.Contains(ready, want) {
			t.Errorf("ready line lacks %q: %s", want, ready)
		}
	}
	out, err := run(t, pageLine(backfillLine))
	if err != nil {
		t.Fatalf("%s: %v\n%s", backfillLine, err, out)
	}
	t.Logf("%s:\n%s", backfillLine, out)

	likes := map[string]int{"p1": 2, "p3": 1}
	want := map[string]int64{}
	for post, n := range seed {
		want["likes-"+post] += int64(n)
	}
	for post, n := range likes {
		want["likes-"+post] += int64(n)
	}
	likesJSON, _ := json.Marshal(likes)
	// The page waits for the roll-ups of the posts it likes; a post liked only in the seed (p2) is
	// waited for below, within the sweep's bounds: its first roll-up comes from the sweep.
	liked := map[string]int64{}
	for post := range likes {
		liked["likes-"+post] = want["likes-"+post]
	}
	wantJSON, _ := json.Marshal(liked)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	page := exec.CommandContext(ctx, "node", "test/app-page-likes.mjs")
	page.Dir = filepath.Join(repoRoot, "web")
	page.Env = append(os.Environ(), "GOOGLE_CLOUD_PROJECT="+project, "FIRESTORE_EMULATOR_HOST="+firestoreAddr,
		emulators.AuthHostEnv+"="+authAddr, "LIKES="+string(likesJSON), "EXPECT="+string(wantJSON))
	if out, err := page.CombinedOutput(); err != nil {
		t.Errorf("the app's page (likes through the JS SDK, then roll-up listeners for %s): %v\n%s", wantJSON, err, out)
		logDeliveries(t, ready, slices.Sorted(maps.Keys(want)))
	}
	counts, err := client.New(ctx, option.WithEndpoint("http://127.0.0.1:"+ports[5]))
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range want {
		if _, ok := liked[id]; !ok {
			waitForRollup(t, counts, id, n, ready)
		}
		if got, err := counts.Count(context.Background(), id); err != nil || got.Count != n {
			t.Errorf("Count %s = %+v (%v), want %d", id, got, err, n)
			if got != nil && got.Rollup != nil {
				t.Logf("rollup %+v", *got.Rollup)
			}
		}
	}

	if err := stopStack(); err != nil {
		t.Errorf("the counters after SIGTERM: %v, want exit 0", err)
	}
	note, _ := http.NewRequest(http.MethodGet, "http://"+firestoreAddr+"/v1/projects/"+project+"/databases/(default)/documents/notes/n1", nil)
	note.Header.Set("Authorization", "Bearer owner")
	if resp, err := http.DefaultClient.Do(note); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the app's note after the counters stopped: %v %v, want the emulator running with it", resp, err)
	} else {
		resp.Body.Close()
	}
	if err := stopFirebase(); err != nil {
		t.Errorf("the app's emulators: %v", err)
	}
}

// startFirebase runs web/'s firebase-tools with args in the app's folder until its Firestore
// emulator answers on firestoreAddr; stop interrupts it as Ctrl-C does and waits for its exit
// (and export). Its Firestore emulator is the Cloud SDK's, run with Java 21 or later.
func startFirebase(t *testing.T, app, firestoreAddr string, args ...string) (stop func() error) {
	t.Helper()
	cache := firebaseEmulatorsPath(t)
	cli, err := filepath.Abs(filepath.Join(repoRoot, "web", "node_modules", ".bin", "firebase"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cli, args...)
	cmd.Dir = app
	// TMPDIR: its hub's locator file, named after the project, is this run's alone.
	cmd.Env = append(os.Environ(), "FIREBASE_EMULATORS_PATH="+cache, "NO_UPDATE_NOTIFIER=1", "TMPDIR="+t.TempDir(),
		"PATH="+java21Dir(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	logs, err := os.Create(filepath.Join(t.TempDir(), "firebase.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			return err
		case <-time.After(2 * time.Minute):
			emulators.StopGroup(cmd.Process.Pid, time.Second)
			return fmt.Errorf("firebase %v still running 2 minutes after Ctrl-C", args)
		}
	}
	t.Cleanup(func() { _ = stop() })
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get("http://" + firestoreAddr + "/"); err == nil {
			resp.Body.Close()
			return stop
		}
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logs.Name())
			t.Fatalf("firebase %v exited (%v):\n%s", args, err, out)
		default:
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logs.Name())
			t.Fatalf("firebase %v: no Firestore emulator on %s after 2 minutes:\n%s", args, firestoreAddr, out)
		}
	}
}

// firebaseEmulatorsPath is a FIREBASE_EMULATORS_PATH holding, under the name firebase-tools looks
// for, a jar that runs the Cloud SDK's Firestore emulator, so firebase-tools downloads nothing.
func firebaseEmulatorsPath(t *testing.T) string {
	t.Helper()
	sdkJar, err := emulators.FirestoreJar()
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]struct {
		Path string `json:"downloadPathRelativeToCacheDir"`
	}
	raw := readRepoFile(t, "web/node_modules/firebase-tools/lib/emulator/downloadableEmulatorInfo.json")
	if err := json.Unmarshal([]byte(raw), &info); err != nil || info["firestore"].Path == "" {
		t.Fatalf("firebase-tools' downloadableEmulatorInfo.json names no Firestore jar (%v)", err)
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, info["firestore"].Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jar := zip.NewWriter(f)
	manifest, err := jar.Create("META-INF/MANIFEST.MF")
	if err == nil {
		_, err = fmt.Fprintf(manifest, "Manifest-Version: 1.0\r\nMain-Class: com.google.cloud.datastore.emulator.firestore.CloudFirestore\r\nClass-Path: file:%s\r\n\r\n", sdkJar)
	}
	if err == nil {
		err = jar.Close()
	}
	if err != nil {
		t.Fatalf("write the Firestore emulator jar: %v", err)
	}
	return dir
}

// javaVersion matches `java -version`'s major version.
var javaVersion = regexp.MustCompile(`version "([0-9]+)`)

// java21Dir is a folder holding a java of version 21 or later, which firebase-tools 15 requires:
// PATH's, JAVA_HOME's, or one in /usr/lib/jvm.
func java21Dir(t *testing.T) string {
	t.Helper()
	var candidates []string
	if java, err := exec.LookPath("java"); err == nil {
		candidates = append(candidates, filepath.Dir(java))
	}
	if home := os.Getenv("JAVA_HOME"); home != "" {
		candidates = append(candidates, filepath.Join(home, "bin"))
	}
	installed, _ := filepath.Glob("/usr/lib/jvm/*/bin")
	for _, dir := range append(candidates, installed...) {
		out, err := exec.Command(filepath.Join(dir, "java"), "-version").CombinedOutput()
		if m := javaVersion.FindSubmatch(out); err == nil && m != nil {
			if major, _ := strconv.Atoi(string(m[1])); major >= 21 {
				return dir
			}
		}
	}
	t.Fatalf("firebase-tools' emulators need Java 21 or later, and none was found (PATH, JAVA_HOME, /usr/lib/jvm): install one, e.g. Temurin 25, or set JAVA_HOME to it")
	return ""
}

// seedRollupWait bounds the wait for a backfilled counter's first roll-up: a lost event's roll-up
// comes at the next sweep, and a counter whose value drifted is repaired once quiet for 3 minutes.
const seedRollupWait = 5 * time.Minute

// waitForRollup waits until counter id's roll-up, as Count shows it, is n.
func waitForRollup(t *testing.T, counts *client.Client, id string, n int64, ready string) {
	t.Helper()
	began := time.Now()
	for {
		got, err := counts.Count(context.Background(), id)
		if err == nil && got.Rollup != nil && got.Rollup.Count == n {
			t.Logf("%s's roll-up showed %d after %v", id, n, time.Since(began).Round(time.Second))
			return
		}
		if time.Since(began) > seedRollupWait {
			t.Errorf("%s's roll-up: %+v (%v) after %v, want %d", id, got, err, seedRollupWait, n)
			logDeliveries(t, ready, []string{id})
			return
		}
		time.Sleep(time.Second)
	}
}

// logDeliveries logs the event bridge's deliveries (its /deliveries) of counters' documents, found
// from the stack's ready line.
func logDeliveries(t *testing.T, ready string, counters []string) {
	t.Helper()
	stats := regexp.MustCompile(`events=(\S+)/stats`).FindStringSubmatch(ready)
	if stats == nil {
		t.Logf("no events= in the ready line: %s", ready)
		return
	}
	for _, id := range counters {
		resp, err := http.Get(stats[1] + "/deliveries?prefix=" + url.QueryEscape("counters/"+id+"/"))
		if err != nil {
			t.Logf("deliveries of %s: %v", id, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("the bridge's deliveries of %s's documents: %s", id, body)
	}
}
