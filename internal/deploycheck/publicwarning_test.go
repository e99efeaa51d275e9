package deploycheck_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// publicIncrementCases are settings of a public Increment, each with what its warning must say
// (empty: no warning): who may call it without an account ("anyone", "App Check alone", "anonymous",
// an email sign-up),
// that callers may create counters ("create any number of counters"), and what a distinct counter
// then tells anyone ("counted:false"). The settings are written as the functions read them.
var publicIncrementCases = []struct {
	env  []string
	want []string
	not  []string
}{
	{nil, []string{"Anyone may call it", "MAX_DELTA=1000000", "create any number of counters", "counted:false"}, nil},
	{[]string{"REQUIRE_ID_TOKEN=false", "MAX_DELTA=1"}, []string{"Anyone may call it", "MAX_DELTA=1 ", "create any number", "counted:false"}, nil},
	// each of these used to silence the warning
	{[]string{"REQUIRE_ID_TOKEN=true"}, []string{"signs in anonymously", "create any number"}, []string{"counted:false"}},
	{[]string{"REQUIRE_APP_CHECK=1"}, []string{"App Check alone", "create any number", "counted:false"}, nil},
	{[]string{"COUNTER_ID_PATTERN=post-[0-9]+"}, []string{"Anyone may call it", "counted:false"}, []string{"create any number"}},
	{[]string{"REQUIRE_APP_CHECK=true", "COUNTER_ID_PATTERN=post-[0-9]+", "CREATE_ON_INCREMENT=false"}, []string{"App Check alone", "counted:false"}, []string{"create any number"}},
	{[]string{"REQUIRE_ID_TOKEN=true", "REQUIRE_APP_CHECK=true", "CREATE_ON_INCREMENT=false"}, []string{"signs in anonymously"}, []string{"create any number", "counted:false"}},
	{[]string{"REQUIRE_ID_TOKEN=true", "REFUSE_ANONYMOUS_USERS=true"}, []string{"signs up with an email address", "create any number"}, []string{"anonymously", "counted:false"}},
	{[]string{"REQUIRE_ID_TOKEN=true", "REQUIRE_VERIFIED_EMAIL=true"}, []string{"create any number"}, []string{"Anyone", "anonymously", "counted:false"}},
	{[]string{"CREATE_ON_INCREMENT=0"}, []string{"Anyone may call it", "counted:false"}, []string{"create any number"}},
	// nobody without an account, and no counter created by increment: nothing to warn of
	{[]string{"REQUIRE_ID_TOKEN=true", "REFUSE_ANONYMOUS_USERS=true", "REQUIRE_VERIFIED_EMAIL=true", "COUNTER_ID_PATTERN=post-[0-9]+"}, nil, nil},
	{[]string{"REQUIRE_ID_TOKEN=1", "REQUIRE_VERIFIED_EMAIL=T", "CREATE_ON_INCREMENT=false"}, nil, nil},
}

// deployWarning runs deploy.sh's dry run with the settings and returns its public-increments
// warning, "" when it printed none.
func deployWarning(t *testing.T, public bool, env []string) string {
	t.Helper()
	args := []string{script, "--dry-run", "--project", "p", "--region", "r"}
	if public {
		args = append(args, "--allow-unauthenticated-increments")
	}
	for _, e := range env {
		args = append(args, "--env", e)
	}
	cmd := exec.Command("bash", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", env, err, stderr.String())
	}
	var warnings []string
	for line := range strings.SplitSeq(stderr.String(), "\n") {
		if w, ok := strings.CutPrefix(line, "deploy.sh: WARNING: "); ok {
			warnings = append(warnings, w)
		}
	}
	return strings.Join(warnings, "\n")
}

// terraformWarning evaluates the module's public-increments check with the settings: the message
// `terraform plan` and `apply` print, "" when the check holds.
func terraformWarning(t *testing.T, public bool, env []string) string {
	t.Helper()
	vars := map[string]cty.Value{"public_increments": cty.BoolVal(public), "environment": cty.MapValEmpty(cty.String)}
	if len(env) > 0 {
		m := map[string]cty.Value{}
		for _, e := range env {
			name, value, _ := strings.Cut(e, "=")
			m[name] = cty.StringVal(value)
		}
		vars["environment"] = cty.MapVal(m)
	}
	ctx := &hcl.EvalContext{Functions: terraformFunctions, Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)}}
	evalLocals(t, ctx, map[string]cty.Value{"deployment": generatedDeployment(t)}, "settings", "increment_guards", "public_increment_risks")
	assert := nested(t, terraformBody(t, "check", "public_increments_guarded"), "assert")
	holds, diags := assert.Attributes["condition"].Expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if holds.True() {
		return ""
	}
	message, diags := assert.Attributes["error_message"].Expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return message.AsString()
}

// TestPublicIncrementsWarnOfWhatAnyoneCanDo: with Increment public, both deploy paths warn, in the
// same words, of what can be done without an account (anyone, anyone with the app under App Check
// alone, anyone after an anonymous sign-in), of counters created by increment when
// CREATE_ON_INCREMENT is on without COUNTER_ID_PATTERN, and of what a distinct counter gives away
// when the client sends the member; they stay quiet only when none of these holds, and for a
// private Increment.
func TestPublicIncrementsWarnOfWhatAnyoneCanDo(t *testing.T) {
	requireBash(t)
	warnings := make([]string, len(publicIncrementCases))
	for i, c := range publicIncrementCases {
		script := deployWarning(t, true, c.env)
		warnings[i] = script
		if (script == "") != (len(c.want) == 0) {
			t.Errorf("%v: warning %q, want a warning %t", c.env, script, len(c.want) > 0)
		}
		for _, w := range c.want {
			if !strings.Contains(script, w) {
				t.Errorf("%v: warning %q does not say %q", c.env, script, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(script, n) {
				t.Errorf("%v: warning %q says %q, which does not hold", c.env, script, n)
			}
		}
	}
	for i, c := range publicIncrementCases {
		if module := terraformWarning(t, true, c.env); module != warnings[i] {
			t.Errorf("%v: deploy.sh warns %q, Terraform %q; want the same words", c.env, warnings[i], module)
		}
	}
	if got := deployWarning(t, false, nil) + terraformWarning(t, false, nil); got != "" {
		t.Errorf("private increments: warned %q", got)
	}
}
