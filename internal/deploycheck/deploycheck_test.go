package deploycheck_test

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/shared"
)

// root is the repository, seen from this package's folder.
const root = "../.."

var (
	script    = filepath.Join(root, "scripts", "deploy.sh")
	terraform = filepath.Join(root, "terraform")
)

// scenarios are the option combinations both deployments are compared with the code in; each gets
// project p, region r and database (default) unless it says otherwise, and 10 delivery attempts
// (the default of deploy.sh --help and var.max_delivery_attempts).
func scenarios(codeEnv map[string]bool) map[string]deploycheck.Options {
	every := map[string]string{} // every variable the code reads, but those with flags of their own
	for name := range codeEnv {
		if name != shared.EnvProject && name != shared.EnvDatabase {
			every[name] = strings.ToLower(name)
		}
	}
	all := map[string]deploycheck.Options{
		"defaults":                      {DatabaseLocation: "nam5"},
		"database in the region":        {},
		"named database":                {Database: "counts", DatabaseLocation: "eur3"},
		"public increments":             {DatabaseLocation: "nam5", PublicIncrements: true},
		"more delivery attempts":        {DatabaseLocation: "nam5", MaxDeliveryAttempts: 20},
		"every variable the code reads": {DatabaseLocation: "nam5", Env: every},
		"renamed collections": {DatabaseLocation: "nam5", Env: map[string]string{
			shared.EnvCountersCollection: "tally", shared.EnvRollupsCollection: "totals", shared.EnvDedupeCollection: "seen"}},
	}
	for name, o := range all {
		o.Project, o.Region = "p", "r"
		o.Database = cmp.Or(o.Database, "(default)")
		o.MaxDeliveryAttempts = cmp.Or(o.MaxDeliveryAttempts, 10)
		all[name] = o
	}
	return all
}

// deployments deploys o with deploy.sh (its dry run) and with Terraform, each read as a Deployment.
func deployments(t *testing.T, o deploycheck.Options) []deploycheck.Deployment {
	t.Helper()
	args := []string{"--project", o.Project, "--region", o.Region, "--database", o.Database,
		"--max-delivery-attempts", strconv.Itoa(o.MaxDeliveryAttempts)}
	vars := map[string]cty.Value{"project": cty.StringVal(o.Project), "region": cty.StringVal(o.Region),
		"database": cty.StringVal(o.Database), "database_location": cty.StringVal(o.DatabaseLocation),
		"public_increments": cty.BoolVal(o.PublicIncrements), "max_delivery_attempts": cty.NumberIntVal(int64(o.MaxDeliveryAttempts))}
	if o.DatabaseLocation != "" {
		args = append(args, "--database-location", o.DatabaseLocation)
	}
	if o.PublicIncrements {
		args = append(args, "--allow-unauthenticated-increments")
	}
	env := map[string]cty.Value{}
	for name, value := range o.Env {
		args = append(args, "--env", name+"="+value)
		if v := strings.ToLower(name); strings.HasSuffix(v, "_collection") { // variables of their own
			vars[v] = cty.StringVal(value)
		} else {
			env[name] = cty.StringVal(value)
		}
	}
	vars["environment"] = cty.MapValEmpty(cty.String)
	if len(env) > 0 {
		vars["environment"] = cty.MapVal(env)
	}
	listing, err := deploycheck.DryRun(script, args...)
	if err != nil {
		t.Fatal(err)
	}
	viaScript, err := deploycheck.ParseDryRun(listing)
	if err != nil {
		t.Fatal(err)
	}
	viaTerraform, err := deploycheck.LoadTerraform(terraform, vars)
	if err != nil {
		t.Fatal(err)
	}
	return []deploycheck.Deployment{viaScript, viaTerraform}
}

// TestDeploymentsAreWhatTheCodeAsksFor: in every scenario, deploy.sh and Terraform each deploy
// exactly the deployment the code asks for (deploycheck.Expected): its entry points and triggers
// (functions.Triggers), deploy.sh's FUNCTION_SETTINGS, the go.mod runtime, the variables shared/
// reads, the topics, the dead-letter policy, the scheduler and the field settings. Equal to one
// expectation, the two paths are equal to each other.
func TestDeploymentsAreWhatTheCodeAsksFor(t *testing.T) {
	settings, runtime, codeEnv := settingsRuntimeEnv(t)
	for name, o := range scenarios(codeEnv) {
		t.Run(name, func(t *testing.T) {
			want, err := deploycheck.Expected(o, settings, runtime)
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range deployments(t, o) {
				for _, p := range deploycheck.Diff(want, got, codeEnv) {
					t.Error(p)
				}
			}
		})
	}
}

// TestSettingsAreWithinThePlatformLimits: every row of FUNCTION_SETTINGS is one Cloud Functions
// accepts, with every limit given.
func TestSettingsAreWithinThePlatformLimits(t *testing.T) {
	settings, runtime, codeEnv := settingsRuntimeEnv(t)
	want, err := deploycheck.Expected(scenarios(codeEnv)["defaults"], settings, runtime)
	if err != nil {
		t.Fatal(err)
	}
	for entry, f := range want.Functions {
		for _, p := range deploycheck.PlatformProblems(f) {
			t.Errorf("FUNCTION_SETTINGS %s: %s", entry, p)
		}
	}
}

// TestUnknownVariablesAreRefused: a typo in a variable's name stops either deployment before it starts.
func TestUnknownVariablesAreRefused(t *testing.T) {
	if _, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--env", "MAX_DELTAS=5"); err == nil || !strings.Contains(err.Error(), "MAX_DELTAS") {
		t.Errorf("deploy.sh accepted --env MAX_DELTAS=5: %v", err)
	}
	vars := map[string]cty.Value{"project": cty.StringVal("p"), "environment": cty.MapVal(map[string]cty.Value{"MAX_DELTAS": cty.StringVal("5")})}
	if _, err := deploycheck.LoadTerraform(terraform, vars); err == nil || !strings.Contains(err.Error(), "MAX_DELTAS") {
		t.Errorf("terraform accepted environment MAX_DELTAS: %v", err)
	}
}

// settingsRuntimeEnv reads what the expectation is made of besides functions.Triggers: deploy.sh's
// FUNCTION_SETTINGS, the runtime of go.mod and the variables shared/ reads.
func settingsRuntimeEnv(t *testing.T) (map[string]deploycheck.Function, string, map[string]bool) {
	t.Helper()
	settings, err := deploycheck.SettingsTable(script)
	if err != nil {
		t.Fatal(err)
	}
	runtime, err := deploycheck.RuntimeForGoMod(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	codeEnv, err := deploycheck.EnvNames(filepath.Join(root, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	return settings, runtime, codeEnv
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
		listing, err := deploycheck.DryRun(script, append([]string{"--project", "p", "--region", "r"}, options...)...)
		if err != nil {
			t.Fatal(err)
		}
		printed, err := deploycheck.Commands(listing)
		if err != nil {
			t.Fatal(err)
		}
		for _, words := range printed {
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
