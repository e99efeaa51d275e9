package deploycheck_test

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/shared"
)

// root is the repository, seen from this package's folder.
const root = "../.."

// codeEnv returns the names of the environment variables shared/ reads (its Env* constants).
func codeEnv(t *testing.T) map[string]bool {
	t.Helper()
	consts, err := deploycheck.EnvNames(filepath.Join(root, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, name := range consts {
		names[name] = true
	}
	return names
}

// want is what the code says a deployment with these settings must be.
func want(t *testing.T, schema shared.Schema, location string, public ...string) deploycheck.Want {
	t.Helper()
	runtime, err := deploycheck.RuntimeForGoMod(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	return deploycheck.Want{
		Triggers: functions.Triggers(schema), Schema: schema, Runtime: runtime,
		Database: "(default)", DatabaseLocation: location, Public: public,
	}
}

func check(t *testing.T, d deploycheck.Deployment, w deploycheck.Want) {
	t.Helper()
	if len(d.Functions) == 0 {
		t.Fatalf("%s deploys no function", d.Source)
	}
	for _, p := range deploycheck.Check(d, w) {
		t.Error(p)
	}
}

// deployScript runs scripts/deploy.sh with args and returns its standard output.
func deployScript(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", "deploy.sh")}, args...)...)
	cmd.Env = append(os.Environ(), "GOOGLE_CLOUD_PROJECT=", "GOOGLE_CLOUD_REGION=", "FIRESTORE_DATABASE=", "FIRESTORE_LOCATION=")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("deploy.sh %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

func dryRun(t *testing.T, args ...string) deploycheck.Deployment {
	t.Helper()
	base := []string{"--dry-run", "--project", "p", "--region", "r", "--database-location", "nam5"}
	d, err := deploycheck.ParseDryRun(deployScript(t, append(base, args...)...))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func terraform(t *testing.T, vars map[string]cty.Value) deploycheck.Deployment {
	t.Helper()
	all := map[string]cty.Value{"project": cty.StringVal("p"), "database_location": cty.StringVal("nam5")}
	for k, v := range vars {
		all[k] = v
	}
	d, err := deploycheck.LoadTerraform(filepath.Join(root, "terraform"), all)
	if err != nil {
		t.Fatal(err)
	}
	// What the module runs on the applying machine is deploy.sh: its dry run says what it does.
	for _, command := range d.LocalExec {
		if len(command) < 2 || command[0] != "bash" || filepath.Base(command[1]) != "deploy.sh" {
			t.Fatalf("terraform runs %q: the checks know only scripts/deploy.sh", command)
		}
		ran, err := deploycheck.ParseDryRun(deployScript(t, append(command[2:], "--dry-run")...))
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(d.DeadLetters, ran.DeadLetters)
	}
	return d
}

func TestDryRunDeploysWhatTheCodeRegisters(t *testing.T) {
	check(t, dryRun(t), want(t, shared.DefaultConfig().Schema, "nam5"))
}

func TestTerraformDeploysWhatTheCodeRegisters(t *testing.T) {
	check(t, terraform(t, nil), want(t, shared.DefaultConfig().Schema, "nam5"))
}

// TestPublicIncrementsIsADeliberateSwitch: private by default (above); the switch opens Increment only.
func TestPublicIncrementsIsADeliberateSwitch(t *testing.T) {
	w := want(t, shared.DefaultConfig().Schema, "nam5", functions.EntryIncrement)
	check(t, dryRun(t, "--allow-unauthenticated-increments"), w)
	check(t, terraform(t, map[string]cty.Value{"public_increments": cty.True}), w)
}

// TestRenamedCollectionsMoveTheTriggerAndFieldSettings: the path pattern, TTL and index settings follow
// the collection names the functions are configured with.
func TestRenamedCollectionsMoveTheTriggerAndFieldSettings(t *testing.T) {
	schema := shared.Schema{Counters: "tally", Rollups: "totals", Dedupe: "seen"}
	check(t, dryRun(t, "--env", "COUNTERS_COLLECTION=tally", "--env", "ROLLUPS_COLLECTION=totals", "--env", "DEDUPE_COLLECTION=seen"),
		want(t, schema, "nam5"))
	check(t, terraform(t, map[string]cty.Value{
		"counters_collection": cty.StringVal("tally"), "rollups_collection": cty.StringVal("totals"), "dedupe_collection": cty.StringVal("seen"),
	}), want(t, schema, "nam5"))
}

// TestDatabaseLocationDefaultsToTheRegion: without --database-location, the Firestore trigger is in the region.
func TestDatabaseLocationDefaultsToTheRegion(t *testing.T) {
	d, err := deploycheck.ParseDryRun(deployScript(t, "--dry-run", "--project", "p", "--region", "r"))
	if err != nil {
		t.Fatal(err)
	}
	check(t, d, want(t, shared.DefaultConfig().Schema, "r"))
	check(t, terraform(t, map[string]cty.Value{"database_location": cty.StringVal(""), "region": cty.StringVal("r")}),
		want(t, shared.DefaultConfig().Schema, "r"))
}

// TestEnvironmentNamesAreTheCodes: given every optional variable they know, both deployments give
// every function exactly the variables the code reads: none missing, none the code ignores.
func TestEnvironmentNamesAreTheCodes(t *testing.T) {
	code := slices.Sorted(maps.Keys(codeEnv(t)))
	var args []string
	for _, name := range strings.Fields(deployScript(t, "--list-env")) {
		if name != shared.EnvProject && name != shared.EnvDatabase { // from --project and --database
			args = append(args, "--env", name+"=1")
		}
	}
	optional, err := deploycheck.LocalStrings(filepath.Join(root, "terraform"), "optional_environment")
	if err != nil {
		t.Fatal(err)
	}
	tfEnv := map[string]cty.Value{}
	for _, name := range optional {
		tfEnv[name] = cty.StringVal("1")
	}
	for _, d := range []deploycheck.Deployment{dryRun(t, args...), terraform(t, map[string]cty.Value{"environment": cty.MapVal(tfEnv)})} {
		for _, f := range d.Functions {
			for _, name := range code {
				if _, ok := f.Env[name]; !ok {
					t.Errorf("%s: %s: the code reads %s but the deployment cannot set it", d.Source, f.Name, name)
				}
			}
			for name := range f.Env {
				if !slices.Contains(code, name) {
					t.Errorf("%s: %s: sets %s, which the code does not read (no Env* constant in shared/)", d.Source, f.Name, name)
				}
			}
		}
	}
}

// TestScriptRefusesUnknownVariables: a typo in --env stops the deployment before it starts.
func TestScriptRefusesUnknownVariables(t *testing.T) {
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "deploy.sh"), "--dry-run", "--project", "p", "--region", "r", "--env", "MAX_DELTAS=5")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "MAX_DELTAS") {
		t.Errorf("deploy.sh accepted --env MAX_DELTAS=5 (err %v): %s", err, out)
	}
}

// TestBothPathsDeployTheSameSettings: every entry point has the same function name, memory, CPU,
// concurrency, timeout and max instances in deploy.sh (FUNCTION_SETTINGS) and in Terraform
// (var.function_settings), and the same dead-letter policy.
func TestBothPathsDeployTheSameSettings(t *testing.T) {
	script, tf := dryRun(t), terraform(t, nil)
	byEntry := map[string]deploycheck.Function{}
	for _, f := range script.Functions {
		byEntry[f.EntryPoint] = f
	}
	for _, f := range tf.Functions {
		if s := byEntry[f.EntryPoint]; s.Name != f.Name || s.Settings != f.Settings {
			t.Errorf("%s: deploy.sh deploys %s with %+v, terraform %s with %+v", f.EntryPoint, s.Name, s.Settings, f.Name, f.Settings)
		}
	}
	if !maps.Equal(script.DeadLetters, tf.DeadLetters) {
		t.Errorf("dead letters: deploy.sh %+v, terraform %+v", script.DeadLetters, tf.DeadLetters)
	}
}

// scriptOptions are the option combinations deploy.sh documents (--help), each on top of
// --project p --region r.
var scriptOptions = [][]string{
	{},
	{"--database-location", "nam5"},
	{"--database", "counts", "--database-location", "eur3"},
	{"--invoker", "serviceAccount:backend@p.iam.gserviceaccount.com", "--invoker", "user:ops@example.com"},
	{"--allow-unauthenticated-increments"},
	{"--env", "COUNTERS_COLLECTION=tally", "--env", "ROLLUPS_COLLECTION=totals", "--env", "DEDUPE_COLLECTION=seen",
		"--env", "MAX_DELTA=100", "--env", "ROLLUP_INTERVAL=2s"},
	{"--max-delivery-attempts", "20"},
	{"--dead-letter-only"},
}

// TestGcloudParsesEveryCommand runs every command deploy.sh can print (every documented option
// combination, identical lines once) and every gcloud command of README.md through the installed
// gcloud's own parser: one that gcloud refuses with a usage error fails the test.
func TestGcloudParsesEveryCommand(t *testing.T) {
	t.Parallel() // both mostly wait for other processes
	if _, err := exec.LookPath("gcloud"); err != nil {
		t.Fatal("gcloud is not on the PATH: install the Google Cloud CLI (the emulators of `make test` need it too)")
	}
	seen := map[string]bool{}
	var commands [][]string
	add := func(words []string) {
		if key := strings.Join(words, "\x00"); !seen[key] && words[0] == "gcloud" {
			seen[key] = true
			commands = append(commands, words)
		}
	}
	for _, options := range scriptOptions {
		listing, err := deploycheck.Commands(deployScript(t, append([]string{"--dry-run", "--project", "p", "--region", "r"}, options...)...))
		if err != nil {
			t.Fatal(err)
		}
		for _, words := range listing {
			add(words)
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	fromReadme, skipped := deploycheck.MarkdownGcloudCommands(string(readme))
	if len(fromReadme) == 0 {
		t.Error("README.md: no gcloud command found in its code blocks")
	}
	for _, words := range fromReadme {
		add(words)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	refused, err := deploycheck.GcloudParses(ctx, commands)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refused {
		t.Error(r)
	}
	t.Logf("gcloud parsed %d distinct commands (%d from README.md; %d README lines use the shell and were left out)",
		len(commands), len(fromReadme), skipped)
}

// TestUploadsBuild assembles exactly what each path uploads, gcloud's (.gcloudignore, as gcloud
// computes it) and Terraform's (the archive_file excludes, as the archive provider applies them),
// and builds the root package there as the buildpack does. Both leave out tests, tools and
// deployment files, and upload the same Go files.
func TestUploadsBuild(t *testing.T) {
	t.Parallel() // both mostly wait for other processes
	if _, err := exec.LookPath("gcloud"); err != nil {
		t.Fatal("gcloud is not on the PATH: install the Google Cloud CLI (the emulators of `make test` need it too)")
	}
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
