package deploycheck_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/deploycheck"
)

// TestDeployPathsCheckAllowedOriginsAsTheFunctionsDo: deploy.sh (its dry run) and Terraform's
// validation of environment accept exactly the ALLOWED_ORIGINS values the functions accept at
// start-up, so a value a browser would never send is refused before anything is deployed, not
// found when the functions fail to start.
func TestDeployPathsCheckAllowedOriginsAsTheFunctionsDo(t *testing.T) {
	requireBash(t)
	values := []string{
		"https://app.example.com",
		"https://app.example.com http://localhost:5173",
		"https://app.example.com  http://127.0.0.1:8000 http://[::1]:8000 capacitor://localhost",
		"https://app.example.com:8443",
		"https://app.example.com/",
		"https://app.example.com/path",
		"https://*.example.com",
		"*",
		"https://App.example.com",
		"https://app.example.com:443",
		"http://localhost:80",
		"http://localhost:0",
		"http://localhost:65536",
		"app.example.com",
		"https://user@app.example.com",
		"https://app.example.com?x=1",
		"https://a.example,https://b.example",
	}
	funcs := maps.Clone(terraformFunctions)
	funcs["can"], funcs["regex"], funcs["split"] = tryfunc.CanFunc, stdlib.RegexFunc, stdlib.SplitFunc
	condition := nested(t, terraformBody(t, "variable", "environment"), "validation").Attributes["condition"].Expr
	for _, value := range values {
		_, err := config.Parse(func(name string) (string, bool) { return value, name == "ALLOWED_ORIGINS" })
		want := err == nil

		_, err = deploycheck.DryRun(script, "--project", "p", "--region", "r", "--env", "ALLOWED_ORIGINS="+value)
		if (err == nil) != want || err != nil && !strings.Contains(err.Error(), "ALLOWED_ORIGINS") {
			t.Errorf("deploy.sh --env ALLOWED_ORIGINS=%q: %v; want accepted %t, as the functions do", value, err, want)
		}

		env := cty.MapVal(map[string]cty.Value{"ALLOWED_ORIGINS": cty.StringVal(value)})
		v, diags := condition.Value(&hcl.EvalContext{Functions: funcs, Variables: map[string]cty.Value{
			"var": cty.ObjectVal(map[string]cty.Value{"environment": env})}})
		if diags.HasErrors() || v.True() != want {
			t.Errorf("terraform environment.ALLOWED_ORIGINS = %q: valid %v (%v), want %t, as the functions do", value, v, diags, want)
		}
	}
}
