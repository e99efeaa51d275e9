package deploycheck_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"

	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/manifest"
)

// roleGates are the settings that gate a declared role or API.
func roleGates() []string {
	var gates []string
	for _, r := range manifest.Roles() {
		gates = append(gates, r.Setting)
	}
	for _, a := range manifest.APIs() {
		gates = append(gates, a.Setting)
	}
	slices.Sort(gates)
	return slices.DeleteFunc(slices.Compact(gates), func(s string) bool { return s == "" })
}

// declaredGrants are the project roles manifest.Roles grants with the gates on or off, each as
// "ACCOUNT ROLE" plus " TITLE EXPRESSION" when conditioned, its resource named as names say.
func declaredGrants(on bool, names *strings.Replacer) []string {
	var grants []string
	for _, r := range manifest.Roles() {
		if r.OnRepository || r.Setting != "" && !on {
			continue
		}
		g := r.Account + " " + r.Role
		if r.Condition != nil {
			g += " " + r.Condition.Title + " " + names.Replace(r.Condition.Expression())
		}
		grants = append(grants, g)
	}
	slices.Sort(grants)
	return grants
}

// declaredAPIs are the APIs manifest.APIs enables on a path with the gates on or off.
func declaredAPIs(terraform, on, rules bool) []string {
	var apis []string
	for _, a := range manifest.APIs() {
		if a.TerraformOnly && !terraform || a.Setting != "" && !on || a.Rules && !terraform && !rules {
			continue
		}
		apis = append(apis, a.Name)
	}
	return apis
}

// TestDeployPathsGrantTheDeclaredRoles: deploy.sh and Terraform create the declared accounts and
// grant exactly the declared project roles, a gated one only with its setting on (--remove revokes
// them all), each condition naming the deployment's resources, and the repository's role on the
// functions' repository alone.
func TestDeployPathsGrantTheDeclaredRoles(t *testing.T) {
	requireBash(t)
	ids := map[string]string{}
	for _, a := range manifest.Accounts() {
		ids["serviceAccount:"+a.ID+"@p.iam.gserviceaccount.com"] = a.Key
	}
	names := strings.NewReplacer("{project}", "p", "{database}", "counts", "{project_number}", "PROJECT_NUMBER", "{region}", "r")
	for _, c := range []struct {
		args        []string
		on, removes bool
	}{
		{nil, false, false},
		{gatesOn(), true, false},
		{[]string{"--remove"}, true, true},
	} {
		commands, err := deploycheck.DryRun(script, append([]string{"--project", "p", "--region", "r", "--database", "counts"}, c.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var grants, accounts, repository []string
		verb := map[bool]string{false: "add", true: "remove"}[c.removes]
		for _, words := range commands {
			f, line := flags(words), strings.Join(words, " ")
			switch {
			case strings.HasPrefix(line, "gcloud projects "+verb+"-iam-policy-binding p "):
				g := ids[f["--member"][0]] + " " + f["--role"][0]
				if cond := f["--condition"][0]; cond != "None" {
					expression, title, _ := strings.Cut(strings.TrimPrefix(cond, "expression="), ",title=")
					g += " " + title + " " + expression
				}
				grants = append(grants, g)
			case strings.HasPrefix(line, "gcloud iam service-accounts create "):
				accounts = append(accounts, words[4]+" "+f["--display-name"][0])
			case strings.HasPrefix(line, "gcloud artifacts repositories add-iam-policy-binding "):
				repository = append(repository, words[4]+" "+f["--location"][0]+" "+ids[f["--member"][0]]+" "+f["--role"][0])
			}
		}
		slices.Sort(grants)
		if want := declaredGrants(c.on, names); !slices.Equal(grants, want) {
			t.Errorf("deploy.sh %q grants (or revokes)\n%q\nwant\n%q", c.args, grants, want)
		}
		if c.removes {
			continue
		}
		var wantAccounts, wantRepository []string
		for _, a := range manifest.Accounts() {
			wantAccounts = append(wantAccounts, a.ID+" "+a.DisplayName)
		}
		for _, r := range manifest.Roles() {
			if r.OnRepository {
				wantRepository = append(wantRepository, "counters-functions r "+r.Account+" "+r.Role)
			}
		}
		if !slices.Equal(accounts, wantAccounts) || !slices.Equal(repository, wantRepository) {
			t.Errorf("deploy.sh %q creates accounts %q and grants on the repository %q; want %q and %q", c.args, accounts, repository, wantAccounts, wantRepository)
		}
	}

	names = strings.NewReplacer("{project}", "p", "{database}", "counts", "{project_number}", "123", "{region}", "r")
	for _, on := range []bool{false, true} {
		var grants []string
		for _, r := range terraformIAM(t, on)["identity_roles"].AsValueMap() {
			g := r.GetAttr("identity").AsString() + " " + r.GetAttr("role").AsString()
			if c := r.GetAttr("condition"); !c.IsNull() {
				g += " " + c.GetAttr("title").AsString() + " " + c.GetAttr("expression").AsString()
			}
			grants = append(grants, g)
		}
		slices.Sort(grants)
		if want := declaredGrants(on, names); !slices.Equal(grants, want) {
			t.Errorf("terraform, gates on %t, grants\n%q\nwant\n%q", on, grants, want)
		}
	}
	accounts := generatedDeployment(t).GetAttr("service_accounts")
	for _, a := range manifest.Accounts() {
		if got := accounts.GetAttr(a.Key); got.GetAttr("account_id").AsString() != a.ID || got.GetAttr("display_name").AsString() != a.DisplayName {
			t.Errorf("terraform's account %s is %#v, want %s %q", a.Key, got, a.ID, a.DisplayName)
		}
	}
	writer := terraformBody(t, "resource", "google_artifact_registry_repository_iam_member", "build_writer")
	if got := expressionText(t, writer.Attributes["repository"]); got != "google_artifact_registry_repository.functions.name" {
		t.Errorf("terraform grants the repository's role on %s, want the functions' repository", got)
	}
}

// gatesOn are deploy.sh's arguments that turn every gate on (and what each needs).
func gatesOn() []string {
	args := []string{"--env", "REQUIRE_ID_TOKEN=true", "--env", "REQUIRE_APP_CHECK=true"}
	for _, s := range roleGates() {
		args = append(args, "--env", s+"=true")
	}
	return args
}

// TestDeployPathsEnableTheDeclaredAPIs: deploy.sh enables the declared APIs but Terraform's own,
// the rules' only with --replace-rules; Terraform enables them all; a gated one only with its
// setting on.
func TestDeployPathsEnableTheDeclaredAPIs(t *testing.T) {
	requireBash(t)
	for _, c := range []struct {
		args      []string
		on, rules bool
	}{
		{nil, false, false},
		{append(gatesOn(), "--replace-rules", filepath.Join(root, "firestore.rules")), true, true},
	} {
		commands, err := deploycheck.DryRun(script, append([]string{"--project", "p", "--region", "r"}, c.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var enabled []string
		for _, words := range commands {
			if strings.HasPrefix(strings.Join(words, " "), "gcloud services enable --project=p ") {
				enabled = append(enabled, words[4:]...)
			}
		}
		if want := declaredAPIs(false, c.on, c.rules); !slices.Equal(enabled, want) {
			t.Errorf("deploy.sh %q enables %q, want %q", c.args, enabled, want)
		}
	}
	for _, on := range []bool{false, true} {
		var enabled []string
		for _, a := range terraformIAM(t, on)["apis"].AsValueSlice() {
			enabled = append(enabled, a.AsString())
		}
		if want := declaredAPIs(true, on, true); !slices.Equal(enabled, want) {
			t.Errorf("terraform, gates on %t, enables %q, want %q", on, enabled, want)
		}
	}
}

// terraformIAM evaluates terraform's locals identity_roles and apis for project p, database
// counts, region r and project number 123, with every gate of roleGates on or off.
func terraformIAM(t *testing.T, on bool) map[string]cty.Value {
	t.Helper()
	ctx := &hcl.EvalContext{Functions: terraformFunctions, Variables: map[string]cty.Value{
		"var": cty.ObjectVal(map[string]cty.Value{"project_id": cty.StringVal("p"), "database": cty.StringVal("counts"), "region": cty.StringVal("r")}),
		"data": cty.ObjectVal(map[string]cty.Value{"google_project": cty.ObjectVal(map[string]cty.Value{
			"project": cty.ObjectVal(map[string]cty.Value{"number": cty.StringVal("123")})})}),
	}}
	guards := map[string]cty.Value{}
	for _, s := range roleGates() {
		guards[s] = cty.BoolVal(on)
	}
	locals := map[string]cty.Value{"increment_guards": cty.ObjectVal(guards), "deployment": generatedDeployment(t)}
	return evalLocals(t, ctx, locals, "identity_roles", "apis")
}

// TestDeployPathsGrantTheDeclaredInvokers: deploy.sh and Terraform let exactly the declared invoker
// (manifest.Invoker: an account, or the admin or http list) call each function, plus allUsers on a
// function public on request once public increments are on.
func TestDeployPathsGrantTheDeclaredInvokers(t *testing.T) {
	requireBash(t)
	useSources(t, "[]") // per-source functions share their rows' invoker column
	lists := map[string][]string{"admin": {"user:ops@x.com"}, "http": {"user:app@x.com", "user:b@x.com"}}
	emails, identities := map[string]string{}, map[string]cty.Value{}
	for _, a := range manifest.Accounts() {
		emails[a.Key] = a.ID + "@p.iam.gserviceaccount.com"
		identities[a.Key] = cty.ObjectVal(map[string]cty.Value{"email": cty.StringVal(emails[a.Key])})
	}
	args := []string{"--project", "p", "--region", "r", "--admin-invoker", lists["admin"][0]}
	for _, m := range lists["http"] {
		args = append(args, "--invoker", m)
	}
	var optIn []cty.Value
	for _, f := range manifest.Deployed() {
		if f.OptIn {
			args, optIn = append(args, "--opt-in", f.Name), append(optIn, cty.StringVal(f.Name))
		}
	}
	funcs := maps.Clone(terraformFunctions)
	funcs["try"] = tryfunc.TryFunc
	for _, public := range []bool{false, true} {
		want := map[string]string{}
		for _, f := range manifest.Deployed() {
			if f.PerSource {
				continue
			}
			members := lists[f.Invoker().List]
			if a := f.Invoker().Account; a != "" {
				members = []string{"serviceAccount:" + emails[a]}
			}
			if public && f.PublicOnRequest {
				members = append(slices.Clone(members), "allUsers")
			}
			want[f.Name] = strings.Join(members, " ")
		}

		shArgs := args
		if public {
			shArgs = append(slices.Clone(args), "--allow-unauthenticated-increments")
		}
		commands, err := deploycheck.DryRun(script, shArgs...)
		if err != nil {
			t.Fatal(err)
		}
		granted := map[string][]string{}
		for _, words := range commands {
			if len(words) > 3 && strings.Join(words[:3], " ") == "gcloud functions add-invoker-policy-binding" {
				granted[words[3]] = append(granted[words[3]], flags(words)["--member"]...)
			}
		}
		got := map[string]string{}
		for name := range want {
			got[name] = strings.Join(granted[name], " ")
		}
		if !maps.Equal(got, want) || len(granted) != len(want) {
			t.Errorf("deploy.sh, public %t, grants %v, want %v", public, granted, want)
		}

		ctx := &hcl.EvalContext{Functions: funcs, Variables: map[string]cty.Value{
			"var": cty.ObjectVal(map[string]cty.Value{
				"opt_in": cty.SetVal(optIn), "function_settings": cty.MapValEmpty(cty.DynamicPseudoType),
				"counters_collection": cty.StringVal("counters"), "public_increments": cty.BoolVal(public),
				"admin_invokers": strings2cty(lists["admin"]...), "http_invokers": strings2cty(lists["http"]...),
			}),
			"google_service_account": cty.ObjectVal(map[string]cty.Value{"identity": cty.ObjectVal(identities)}),
		}}
		locals := evalLocals(t, ctx, map[string]cty.Value{"deployment": generatedDeployment(t), "source_functions": cty.EmptyObjectVal,
			"name_prefix": cty.StringVal("")}, "functions", "invoker_lists", "invokers")
		got = map[string]string{}
		for entry, members := range locals["invokers"].AsValueMap() {
			f, _ := manifest.DeployedFunction(entry)
			var list []string
			for _, m := range members.AsValueSlice() {
				list = append(list, m.AsString())
			}
			got[f.Name] = strings.Join(list, " ")
		}
		if !maps.Equal(got, want) {
			t.Errorf("terraform, public %t, invokers %v, want %v", public, got, want)
		}
	}
}
