package deploycheck_test

import (
	"encoding/base64"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/manifest"
)

// terraformAttr evaluates the attribute attr of the resource typ.name (or of its nested block) in ctx.
func terraformAttr(t *testing.T, ctx *hcl.EvalContext, typ, name string, path ...string) cty.Value {
	t.Helper()
	body := terraformBody(t, "resource", typ, name)
	for _, block := range path[:len(path)-1] {
		body = nested(t, body, block)
	}
	v, diags := body.Attributes[path[len(path)-1]].Expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return v
}

// TestDeployPathsParkDeadLettersAsDeclared: both paths give Pub/Sub's service agent
// (manifest.DeadLetters) its role on the dead-letter topic and on the function's subscription, and
// keep parked messages for the declared retention and ack deadline.
func TestDeployPathsParkDeadLettersAsDeclared(t *testing.T) {
	requireBash(t)
	d, topic := manifest.DeadLetters, ""
	for _, f := range manifest.Deployed() {
		topic += f.Trigger.DeadLetterTopic // one function has one (local.dead_letter)
	}
	commands, err := deploycheck.DryRun(script, "--project", "p", "--region", "r")
	if err != nil {
		t.Fatal(err)
	}
	agent := "serviceAccount:" + strings.ReplaceAll(d.Agent, "{project_number}", "PROJECT_NUMBER")
	want := map[string]string{
		"topics add-iam-policy-binding " + topic:            agent + " " + d.TopicRole,
		"subscriptions add-iam-policy-binding SUBSCRIPTION": agent + " " + d.SubscriptionRole,
		"subscriptions create " + topic:                     strconv.Itoa(int(d.Retention.Hours()/24)) + "d " + strconv.Itoa(int(d.AckDeadline.Seconds())),
	}
	got := map[string]string{}
	for _, words := range commands {
		if len(words) < 5 || words[1] != "pubsub" {
			continue
		}
		f, key := flags(words), strings.Join(words[2:5], " ")
		switch {
		case strings.Contains(key, "add-iam-policy-binding"):
			got[key] = f["--member"][0] + " " + f["--role"][0]
		case strings.HasPrefix(key, "subscriptions create "):
			got[key] = f["--message-retention-duration"][0] + " " + f["--ack-deadline"][0]
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("deploy.sh: %q, want %q", got, want)
	}

	ctx := &hcl.EvalContext{Functions: terraformFunctions, Variables: map[string]cty.Value{
		"data": cty.ObjectVal(map[string]cty.Value{"google_project": cty.ObjectVal(map[string]cty.Value{
			"project": cty.ObjectVal(map[string]cty.Value{"number": cty.StringVal("123")})})}),
	}}
	evalLocals(t, ctx, map[string]cty.Value{"deployment": generatedDeployment(t)}, "pubsub_agent")
	agent = "serviceAccount:" + strings.ReplaceAll(d.Agent, "{project_number}", "123")
	for typ, role := range map[string]string{"google_pubsub_topic_iam_member.dead_letter_publisher": d.TopicRole,
		"google_pubsub_subscription_iam_member.dead_letter_subscriber": d.SubscriptionRole} {
		typ, name, _ := strings.Cut(typ, ".")
		if g := terraformAttr(t, ctx, typ, name, "role").AsString() + " " + terraformAttr(t, ctx, typ, name, "member").AsString(); g != role+" "+agent {
			t.Errorf("terraform %s.%s grants %s, want %s %s", typ, name, g, role, agent)
		}
	}
	retention, err := time.ParseDuration(terraformAttr(t, ctx, "google_pubsub_subscription", "dead_letter", "message_retention_duration").AsString())
	if err != nil || retention != d.Retention {
		t.Errorf("terraform keeps dead letters %v (%v), want %v", retention, err, d.Retention)
	}
	if ack := terraformAttr(t, ctx, "google_pubsub_subscription", "dead_letter", "ack_deadline_seconds"); !ack.Equals(cty.NumberIntVal(int64(d.AckDeadline.Seconds()))).True() {
		t.Errorf("terraform gives dead-letter readers %s s, want %v", ack.GoString(), d.AckDeadline)
	}
}

// TestDeployPathsScheduleAsDeclared: both paths' scheduler jobs (Terraform's: one) publish manifest.ScheduleMessage to
// their topic on the declared schedule, in manifest.ScheduleTimeZone.
func TestDeployPathsScheduleAsDeclared(t *testing.T) {
	requireBash(t)
	var want []string
	topics := map[string]cty.Value{}
	for _, f := range manifest.Deployed() {
		if s := f.Trigger.Schedule; s != "" {
			want = append(want, strings.Join([]string{f.Trigger.Topic, s, manifest.ScheduleTimeZone, manifest.ScheduleMessage}, " | "))
			topics[f.Trigger.Topic] = cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("TOPIC")})
		}
	}
	commands, err := deploycheck.DryRun(script, "--project", "p", "--region", "r")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, words := range commands {
		if strings.HasPrefix(strings.Join(words, " "), "gcloud scheduler jobs create pubsub ") {
			f := flags(words)
			got = append(got, strings.Join([]string{f["--topic"][0], f["--schedule"][0], f["--time-zone"][0], f["--message-body"][0]}, " | "))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("deploy.sh schedules %q, want %q", got, want)
	}

	funcs := maps.Clone(terraformFunctions)
	funcs["one"] = function.New(&function.Spec{Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
		Type: function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) { return args[0].Index(cty.NumberIntVal(0)), nil }})
	funcs["base64encode"] = function.New(&function.Spec{Params: []function.Parameter{{Name: "s", Type: cty.String}},
		Type: function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.StringVal(base64.StdEncoding.EncodeToString([]byte(args[0].AsString()))), nil
		}})
	ctx := &hcl.EvalContext{Functions: funcs, Variables: map[string]cty.Value{
		"google_pubsub_topic": cty.ObjectVal(map[string]cty.Value{"topic": cty.MapVal(topics)}),
	}}
	evalLocals(t, ctx, map[string]cty.Value{"deployment": generatedDeployment(t)}, "schedule")
	job := func(path ...string) string {
		return terraformAttr(t, ctx, "google_cloud_scheduler_job", "rollup_tick", path...).AsString()
	}
	data, _ := base64.StdEncoding.DecodeString(job("pubsub_target", "data"))
	tf := strings.Join([]string{ctx.Variables["local"].GetAttr("schedule").GetAttr("topic").AsString(), job("schedule"), job("time_zone"), string(data)}, " | ")
	if job("pubsub_target", "topic_name") != "TOPIC" || len(want) != 1 || tf != want[0] {
		t.Errorf("terraform schedules %q on topic %s, want %q", tf, job("pubsub_target", "topic_name"), want)
	}
}
