package deploycheck_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/localstack"
	"github.com/shardcount/counters/shared"
)

// root is the repository, seen from this package's folder.
const root = "../.."

var (
	script    = filepath.Join(root, "scripts", "deploy.sh")
	terraform = filepath.Join(root, "terraform")
)

// scenarios are the option combinations both deployments are compared with the code in, each in
// project p, region r; what an option leaves empty is not given, so that the defaults are compared too.
func scenarios(codeEnv map[string]bool) map[string]deploycheck.Options {
	every := map[string]string{} // every variable the code reads, but those with flags of their own
	for name := range codeEnv {
		if name != shared.EnvProject && name != shared.EnvDatabase {
			every[name] = strings.ToLower(name)
		}
	}
	all := map[string]deploycheck.Options{
		"defaults":                      {},
		"database location":             {DatabaseLocation: "nam5"},
		"named database":                {Database: "counts", DatabaseLocation: "eur3"},
		"public increments":             {PublicIncrements: true},
		"more delivery attempts":        {MaxDeliveryAttempts: 20},
		"every variable the code reads": {Env: every},
		"renamed collections": {Env: map[string]string{
			shared.EnvCountersCollection: "tally", shared.EnvRollupsCollection: "totals", shared.EnvDedupeCollection: "seen"}},
	}
	for name, o := range all {
		o.Project, o.Region = "p", "r"
		all[name] = o
	}
	return all
}

// deployments deploys o with deploy.sh (its dry run) and with Terraform, each read as a Deployment.
func deployments(t *testing.T, o deploycheck.Options) []deploycheck.Deployment {
	t.Helper()
	args := []string{"--project", o.Project, "--region", o.Region}
	vars := map[string]cty.Value{"project": cty.StringVal(o.Project), "region": cty.StringVal(o.Region)}
	give := func(variable string, value cty.Value, words ...string) {
		vars[variable], args = value, append(args, words...)
	}
	if o.Database != "" {
		give("database", cty.StringVal(o.Database), "--database", o.Database)
	}
	if o.DatabaseLocation != "" {
		give("database_location", cty.StringVal(o.DatabaseLocation), "--database-location", o.DatabaseLocation)
	}
	if n := o.MaxDeliveryAttempts; n != 0 {
		give("max_delivery_attempts", cty.NumberIntVal(int64(n)), "--max-delivery-attempts", strconv.Itoa(n))
	}
	if o.PublicIncrements {
		give("public_increments", cty.True, "--allow-unauthenticated-increments")
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
	if len(env) > 0 {
		vars["environment"] = cty.MapVal(env)
	}
	viaScript, _, err := deploycheck.DryRun(script, args...)
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
	if _, _, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--env", "MAX_DELTAS=5"); err == nil || !strings.Contains(err.Error(), "MAX_DELTAS") {
		t.Errorf("deploy.sh accepted --env MAX_DELTAS=5: %v", err)
	}
	vars := map[string]cty.Value{"project": cty.StringVal("p"), "environment": cty.MapVal(map[string]cty.Value{"MAX_DELTAS": cty.StringVal("5")})}
	if _, err := deploycheck.LoadTerraform(terraform, vars); err == nil || !strings.Contains(err.Error(), "MAX_DELTAS") {
		t.Errorf("terraform accepted environment MAX_DELTAS: %v", err)
	}
}

// TestLocalPushFillsTheDeployedConcurrency: the local stack's Pub/Sub pusher gives each instance as many
// increment deliveries at once as IncrementFromPubSub's deployed concurrency, so local figures (group
// commit's sharing, drain rates) are those of the deployed function.
func TestLocalPushFillsTheDeployedConcurrency(t *testing.T) {
	code, err := deploycheck.ReadCode(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := code.Settings[functions.EntryIncrementFromPubSub].Concurrency; got != localstack.PushInFlight {
		t.Errorf("IncrementFromPubSub is deployed at concurrency %d, the local pusher keeps %d in flight per instance", got, localstack.PushInFlight)
	}
}
