package deploycheck_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/manifest"
)

// fakeGcloud is a gcloud on the PATH of a real (not dry) run of deploy.sh that records every command
// and answers as a project where everything exists would, unless the test says otherwise.
type fakeGcloud struct {
	dir string
	env []string
}

// fakeGcloudScript answers: auth print-access-token with tok-secret; the describe commands that check whether a resource exists with
// $FAKE_DESCRIBE_ERROR (on stderr, failing) when set (not the lookups of functions, triggers and the
// project); get-iam-policy with the members in $FAKE_INVOKERS; functions list with the functions in
// $FAKE_SOURCES; remove-invoker-policy-binding by failing
// when $FAKE_REMOVE_FAILS is set; everything else with success. A describe command is one whose first
// four words say describe, not one whose values do (an alert policy's documentation names one).
const fakeGcloudScript = `#!/usr/bin/env bash
printf '%s\n' "$*" >>"$FAKE_LOG"
case "$*" in
"auth print-access-token"*) echo tok-secret ;;
"functions describe "* | "eventarc triggers describe "* | "projects describe "*) ;;
*" describe "*)
  if [[ -n ${FAKE_DESCRIBE_ERROR:-} && "${*:1:4} " == *" describe "* ]]; then echo "$FAKE_DESCRIBE_ERROR" >&2; exit 1; fi ;;
*get-iam-policy*) printf '%s\n' ${FAKE_INVOKERS:-} ;;
"functions list "*) printf '%s\n' ${FAKE_SOURCES:-} ;;
*remove-invoker-policy-binding*)
  if [[ -n ${FAKE_REMOVE_FAILS:-} ]]; then echo "ERROR: (gcloud.functions.remove-invoker-policy-binding) PERMISSION_DENIED" >&2; exit 1; fi ;;
esac
exit 0
`

func newFakeGcloud(t *testing.T, env ...string) *fakeGcloud {
	t.Helper()
	dir := t.TempDir()
	for name, script := range map[string]string{"gcloud": fakeGcloudScript, "curl": fakeCurlScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &fakeGcloud{dir: dir, env: append(env, "FAKE_LOG="+filepath.Join(dir, "log"))}
}

// deploy runs deploy.sh for real against the fake gcloud and returns its stderr and the commands
// gcloud received.
func (g *fakeGcloud) deploy(t *testing.T, args ...string) (stderr string, commands []string, err error) {
	t.Helper()
	log := filepath.Join(g.dir, "log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{script, "--project", "p", "--region", "r", "--database-location", "nam5"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+g.dir+":"+os.Getenv("PATH"), "GOOGLE_CLOUD_PROJECT=", "GOOGLE_CLOUD_REGION=",
		"FIRESTORE_DATABASE=", "FIRESTORE_LOCATION=")
	cmd.Env = append(cmd.Env, g.env...)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	err = cmd.Run()
	received, _ := os.ReadFile(log)
	return errOut.String(), strings.Split(strings.TrimSpace(string(received)), "\n"), err
}

// removed lists the members revoked from function name.
func removed(commands []string, name string) []string {
	var members []string
	for _, c := range commands {
		if rest, ok := strings.CutPrefix(c, "functions remove-invoker-policy-binding "+name+" "); ok {
			_, member, _ := strings.Cut(rest, "--member=")
			members = append(members, member)
		}
	}
	return members
}

// TestInvokerListsAreAuthoritative: each function ends up with exactly its list: members the
// service has but the list lacks are revoked (allUsers too, once public increments are off, and from
// the event functions, which the trigger account alone invokes), admin invokers reach
// ConfigureCounter only and HTTP invokers the others, and a failed revoke stops the deploy instead
// of being hidden.
func TestInvokerListsAreAuthoritative(t *testing.T) {
	requireBash(t)
	g := newFakeGcloud(t, "FAKE_INVOKERS=user:gone@x.com user:app@x.com user:ops@x.com allUsers")
	_, commands, err := g.deploy(t, "--invoker", "user:app@x.com", "--admin-invoker", "user:ops@x.com")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"increment":         "user:gone@x.com user:ops@x.com allUsers",
		"count":             "user:gone@x.com user:ops@x.com allUsers",
		"configure-counter": "user:gone@x.com user:app@x.com allUsers",
		// An allUsers here would let anyone POST push envelopes with any publishTime.
		"increment-from-pubsub": "user:gone@x.com user:app@x.com user:ops@x.com allUsers",
	} {
		if got := strings.Join(removed(commands, name), " "); got != want {
			t.Errorf("%s: revoked %q, want %q", name, got, want)
		}
	}
	for _, c := range commands {
		if strings.Contains(c, "add-invoker-policy-binding configure-counter") && strings.Contains(c, "user:app@x.com") ||
			strings.Contains(c, "add-invoker-policy-binding count") && strings.Contains(c, "user:ops@x.com") {
			t.Errorf("granted across lists: %s", c)
		}
	}
	_, commands, err = g.deploy(t, "--allow-unauthenticated-increments")
	if err != nil {
		t.Fatal(err)
	}
	if got := removed(commands, "increment"); strings.Contains(strings.Join(got, " "), "allUsers") {
		t.Errorf("public increments: revoked %v from increment, which must keep allUsers", got)
	}

	failing := newFakeGcloud(t, "FAKE_INVOKERS=user:gone@x.com", "FAKE_REMOVE_FAILS=1")
	if stderr, _, err := failing.deploy(t); err == nil || !strings.Contains(stderr, "PERMISSION_DENIED") {
		t.Errorf("a failed revoke: err %v, stderr %q; want the deploy stopped with gcloud's message", err, stderr)
	}
}

// TestPublicMembersAreRefused: allUsers and allAuthenticatedUsers are refused in both invoker lists,
// before anything runs.
func TestPublicMembersAreRefused(t *testing.T) {
	requireBash(t)
	for _, flag := range []string{"--invoker", "--admin-invoker"} {
		for _, member := range []string{"allUsers", "allAuthenticatedUsers"} {
			_, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", flag, member)
			if err == nil || !strings.Contains(err.Error(), "public members are refused") {
				t.Errorf("%s %s: %v; want it refused", flag, member, err)
			}
		}
	}
}

// TestDescribeFailuresOtherThanNotFoundStopTheDeploy: a describe that fails for another reason than
// absence (here: no permission) stops the deploy with gcloud's message, and creates nothing; one that
// says NOT_FOUND creates the resource.
func TestDescribeFailuresOtherThanNotFoundStopTheDeploy(t *testing.T) {
	requireBash(t)
	denied := newFakeGcloud(t, "FAKE_DESCRIBE_ERROR=ERROR: (gcloud.firestore.databases.describe) PERMISSION_DENIED: caller lacks datastore.databases.get")
	stderr, commands, err := denied.deploy(t)
	if err == nil || !strings.Contains(stderr, "PERMISSION_DENIED: caller lacks datastore.databases.get") {
		t.Errorf("err %v, stderr %q; want the deploy stopped with the describe's message", err, stderr)
	}
	for _, c := range commands {
		if strings.Contains(c, " create ") {
			t.Errorf("created after a failed describe: %s", c)
		}
	}
	absent := newFakeGcloud(t, "FAKE_DESCRIBE_ERROR=ERROR: (gcloud.pubsub.topics.describe) NOT_FOUND: Resource not found")
	if _, commands, err := absent.deploy(t); err != nil || !strings.Contains(strings.Join(commands, "\n"), "pubsub topics create counter-increments") {
		t.Errorf("err %v; want the absent resources created: %v", err, commands)
	}
}

// fakeCurlScript records each call (its arguments, the file it sends, whether the token came on
// standard input) and answers as the Firebase Rules API would: a created ruleset's name, and for the
// release's update NOT_FOUND (failing, as --fail-with-body does) when $FAKE_NO_RELEASE is set.
const fakeCurlScript = `#!/usr/bin/env bash
printf 'ARGS %s\n' "$*" >>"$FAKE_LOG"
config=$(cat)
[[ $config == 'header = "Authorization: Bearer tok-secret"' ]] && echo "TOKEN on stdin" >>"$FAKE_LOG"
for a in "$@"; do [[ $a == @* ]] && { printf 'BODY '; cat "${a#@}"; echo; } >>"$FAKE_LOG"; done
case "$*" in
*"-X POST"*/rulesets) echo '{"name": "projects/p/rulesets/r-1"}' ;;
*"-X PATCH"*) if [[ -n ${FAKE_NO_RELEASE:-} ]]; then echo '{"error": {"code": 404, "status": "NOT_FOUND"}}'; exit 22; fi; echo '{}' ;;
*) echo '{}' ;;
esac
`

// apiCalls are the calls the fake curl received to a URL containing api, and the body of each
// (one is logged after its call).
func apiCalls(commands []string, api string) (calls, bodies []string) {
	ours := false
	for _, c := range commands {
		if rest, ok := strings.CutPrefix(c, "ARGS "); ok {
			if ours = strings.Contains(rest, api); ours {
				calls = append(calls, rest)
			}
		} else if rest, ok := strings.CutPrefix(c, "BODY "); ok && ours {
			bodies = append(bodies, rest)
		}
	}
	return calls, bodies
}

// TestSLOsAreReplacedOrCreated: deploy.sh replaces the SLO service and each SLO with the generated
// body (PATCH), and creates each one the API does not have (POST with its ID); --remove deletes the
// service, and with it its SLOs.
func TestSLOsAreReplacedOrCreated(t *testing.T) {
	requireBash(t)
	g := newFakeGcloud(t)
	dir := filepath.Join(root, "scripts", "monitoring")
	slos, _ := filepath.Glob(filepath.Join(dir, "slos", "*.json"))
	for _, missing := range []bool{false, true} {
		if missing {
			g.env = append(g.env, "FAKE_NO_RELEASE=1")
		}
		_, commands, err := g.deploy(t)
		if err != nil {
			t.Fatal(err)
		}
		calls, _ := apiCalls(commands, "monitoring.googleapis.com")
		var want, wantBodies []string // the calls, and the files they send
		for _, f := range append([]string{filepath.Join(dir, "service.json")}, slos...) {
			id := strings.TrimSuffix(filepath.Base(f), ".json")
			parent, param := "projects/p/services", "serviceId"
			if id != "service" {
				parent, param = "projects/p/services/counters/serviceLevelObjectives", "serviceLevelObjectiveId"
			} else {
				id = "counters"
			}
			rel, _ := filepath.Rel(root, f)
			want, wantBodies = append(want, "-X PATCH "+parent+"/"+id), append(wantBodies, rel)
			if missing {
				want, wantBodies = append(want, "-X POST "+parent+"?"+param+"="+id), append(wantBodies, rel)
			}
		}
		if len(calls) != len(want) {
			t.Fatalf("missing %t: calls %q, want %q", missing, calls, want)
		}
		for i, c := range calls {
			cut := strings.LastIndex(want[i], " ")
			method, url := want[i][:cut], want[i][cut+1:]
			if !strings.Contains(c, method) || !strings.HasSuffix(c, "https://monitoring.googleapis.com/v3/"+url) || !strings.Contains(c, "/"+wantBodies[i]+" ") {
				t.Errorf("call %d: %q, want %s sending %s", i, c, want[i], wantBodies[i])
			}
		}
	}
	_, commands, err := g.deploy(t, "--remove")
	if err != nil {
		t.Fatal(err)
	}
	if calls, _ := apiCalls(commands, "monitoring.googleapis.com"); len(calls) != 1 || !strings.Contains(calls[0], "-X DELETE") || !strings.HasSuffix(calls[0], "/v3/projects/p/services/counters") {
		t.Errorf("--remove: calls %q, want one DELETE of the service", calls)
	}
}

// TestRulesAreReplacedOnlyWhenAsked: without --replace-rules no call reaches the Rules API and the
// script says what to add; with it, the file becomes a ruleset (its text exactly) that the
// database's release then names, created when the database has none; the token never shows; a
// file without the counters' block is refused before anything runs.
func TestRulesAreReplacedOnlyWhenAsked(t *testing.T) {
	requireBash(t)
	g := newFakeGcloud(t)
	stderr, commands, err := g.deploy(t)
	if err != nil {
		t.Fatal(err)
	}
	log := strings.Join(commands, "\n")
	if strings.Contains(log, "firebaserules") {
		t.Errorf("without --replace-rules the rules were touched:\n%s", log)
	}
	if !strings.Contains(stderr, "left as they are") || !strings.Contains(stderr, "make rules APP_RULES=") {
		t.Errorf("without --replace-rules: stderr %q; want it to say the rules were left and what to add", stderr)
	}

	rulesFile := filepath.Join(root, "firestore.rules")
	text, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, noRelease := range []bool{false, true} {
		g.env = slices.DeleteFunc(g.env, func(e string) bool { return strings.HasPrefix(e, "FAKE_NO_RELEASE=") })
		if noRelease {
			g.env = append(g.env, "FAKE_NO_RELEASE=1")
		}
		stderr, commands, err := g.deploy(t, "--replace-rules", rulesFile)
		if err != nil {
			t.Fatalf("no release %t: %v\n%s", noRelease, err, stderr)
		}
		calls, bodies := apiCalls(commands, "firebaserules")
		want := []string{"-X POST .../v1/projects/p/rulesets", "-X PATCH .../v1/projects/p/releases/cloud.firestore"}
		if noRelease {
			want = append(want, "-X POST .../v1/projects/p/releases")
		}
		if len(calls) != len(want) {
			t.Fatalf("no release %t: calls %q, want %q", noRelease, calls, want)
		}
		for i, c := range calls {
			method, url, _ := strings.Cut(want[i], " .../")
			if !strings.Contains(c, method) || !strings.HasSuffix(c, "https://firebaserules.googleapis.com/"+url) {
				t.Errorf("call %d: %q, want %s", i, c, want[i])
			}
		}
		var ruleset struct {
			Source struct {
				Files []struct{ Name, Content string }
			}
		}
		if err := json.Unmarshal([]byte(bodies[0]), &ruleset); err != nil || len(ruleset.Source.Files) != 1 ||
			ruleset.Source.Files[0].Content != strings.TrimRight(string(text), "\n") {
			t.Errorf("the ruleset sent (%v) is not firestore.rules' text:\n%s", err, bodies[0])
		}
		if !strings.Contains(bodies[1], `"rulesetName":"projects/p/rulesets/r-1"`) {
			t.Errorf("the release names %s, want the new ruleset", bodies[1])
		}
		all, _ := apiCalls(commands, "")
		if got := strings.Count(strings.Join(commands, "\n"), "TOKEN on stdin"); got != len(all) {
			t.Errorf("the token came on standard input %d times in %d calls", got, len(all))
		}
		if strings.Contains(stderr, "tok-secret") || strings.Contains(strings.Join(calls, "\n"), "tok-secret") {
			t.Error("the access token was printed or passed as an argument")
		}
	}

	if _, err := deploycheck.DryRun(script, "--project", "p", "--region", "r", "--replace-rules", filepath.Join(root, "README.md")); err == nil ||
		!strings.Contains(err.Error(), "holds no counters' block") {
		t.Errorf("--replace-rules README.md: %v; want it refused", err)
	}
}

// TestFunctionsAreBuiltByTheBuildAccountIntoTheirRepository: both paths create the functions'
// Docker repository in the region and build every function into it, deploy.sh with the build
// account, not the default one, the functions of two declared counter sources included.
func TestFunctionsAreBuiltByTheBuildAccountIntoTheirRepository(t *testing.T) {
	requireBash(t)
	useSources(t, twoSources)
	const repository = "projects/p/locations/r/repositories/counters-functions"
	commands, err := deploycheck.DryRun(script, "--project", "p", "--region", "r")
	if err != nil {
		t.Fatal(err)
	}
	created, built := false, 0
	for _, words := range commands {
		line, f := strings.Join(words, " "), flags(words)
		switch {
		case strings.HasPrefix(line, "gcloud artifacts repositories create counters-functions "):
			created = slices.Equal(f["--location"], []string{"r"}) && slices.Equal(f["--repository-format"], []string{"docker"})
		case strings.HasPrefix(line, "gcloud functions deploy "):
			if slices.Equal(f["--docker-repository"], []string{repository}) &&
				slices.Equal(f["--build-service-account"], []string{"projects/p/serviceAccounts/counters-build@p.iam.gserviceaccount.com"}) {
				built++
			} else {
				t.Errorf("deploy.sh builds a function elsewhere than %s or by another account: %s", repository, line)
			}
		}
	}
	want := 0
	for _, f := range manifest.Deployed() {
		switch {
		case f.OptIn: // deployed only when named
		case f.PerSource: // one per declared pattern
			want += len(sourceNames("posts/{post}/likes/{like}", "shops/{shop}/orders/{order}"))
		default:
			want++
		}
	}
	if !created || built != want {
		t.Errorf("deploy.sh: repository created in r %t, %d functions built there by counters-build, want every function deployed by default (%d)", created, built, want)
	}

	repo := terraformBody(t, "resource", "google_artifact_registry_repository", "functions")
	for name, want := range map[string]string{"repository_id": "counters-functions", "format": "DOCKER", "location": "var.region"} {
		if got := expressionText(t, repo.Attributes[name]); got != want {
			t.Errorf("terraform: the repository's %s is %s, want %s", name, got, want)
		}
	}
	build := nested(t, terraformBody(t, "resource", "google_cloudfunctions2_function", "function"), "build_config")
	if got := expressionText(t, build.Attributes["docker_repository"]); got != "google_artifact_registry_repository.functions.id" {
		t.Errorf("terraform: the functions are built into %q, want the functions' repository", got)
	}
}

// expressionText is an attribute's value when it is a string of literals, local.name_prefix
// (empty) and local.deployment, else its source text; "" when absent.
func expressionText(t *testing.T, a *hclsyntax.Attribute) string {
	t.Helper()
	if a == nil {
		return ""
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"local": cty.ObjectVal(map[string]cty.Value{
		"name_prefix": cty.StringVal(""), "deployment": generatedDeployment(t)})}}
	if v, diags := a.Expr.Value(ctx); !diags.HasErrors() && v.Type() == cty.String {
		return v.AsString()
	}
	r := a.Expr.Range()
	src, err := os.ReadFile(r.Filename)
	if err != nil {
		t.Fatal(err)
	}
	return string(src[r.Start.Byte:r.End.Byte])
}
