package deploycheck_test

import (
	"cmp"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
// exactly the deployment the code asks for (Code.Expected): the entry points and triggers of
// functions.Triggers, deploy.sh's FUNCTION_SETTINGS (within the platform's limits), go.mod's runtime,
// the variables shared/ reads, the topics, the dead-letter policy, the scheduler and the field
// settings. Equal to one expectation, the two paths are equal to each other.
func TestDeploymentsAreWhatTheCodeAsksFor(t *testing.T) {
	code, err := deploycheck.ReadCode(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range scenarios(code.Env) {
		t.Run(name, func(t *testing.T) {
			want, err := code.Expected(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range deployments(t, o) {
				for _, p := range code.Diff(want, got) {
					t.Error(p)
				}
			}
		})
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
