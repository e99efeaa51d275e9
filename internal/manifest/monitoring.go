package manifest

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/shared"
)

// Monitoring: the log-based metrics over the functions' log lines, the alert policies and the
// dashboard that both deploy paths create (`go generate` writes them into scripts/monitoring/ and
// terraform/monitoring.gen.tf.json). docs/operations.md ("Monitoring") says what each means and what
// to do when an alert fires.

// LogMetric is a log-based metric, logging.googleapis.com/user/<Name>: a counter of the log lines
// that match, or a distribution of a numeric field of theirs.
type LogMetric struct {
	// Name is the metric's ID.
	Name string
	// Description says what the metric measures.
	Description string
	// EntryPoints are the functions whose lines it reads.
	EntryPoints []string
	// Event is the lines' "event" field (functions.EventIncrementsApplied, ...); Where adds fields and the values
	// they must equal (a string or a bool).
	Event string
	Where []LogField
	// Value is the numeric field a distribution is made of; "" counts the lines.
	Value string
	// Unit is the unit of Value ("1", "s").
	Unit string
	// Scale is the upper bound of a distribution's first bucket; each next one doubles it.
	Scale float64
	// Labels are string fields of the lines that label the metric's time series.
	Labels []string
}

// LogField is a field of a log line's JSON payload and the value it must equal.
type LogField struct {
	Name   string
	Equals any
}

// distributionBuckets is the number of finite, doubling buckets of every distribution.
const distributionBuckets = 32

// Type is the metric's type in Cloud Monitoring.
func (m LogMetric) Type() string { return "logging.googleapis.com/user/" + m.Name }

// Buckets is the distribution's exponential buckets: count, growth factor and scale.
func (m LogMetric) Buckets() (count int, growth, scale float64) {
	return distributionBuckets, 2, m.Scale
}

// Filter is the metric's Cloud Logging query: the lines of its functions (on Cloud Run) whose fields
// have the values it names.
func (m LogMetric) Filter() string {
	var services []string
	for _, e := range m.EntryPoints {
		f, _ := DeployedFunction(e)
		services = append(services, strconv.Quote(f.Name))
	}
	parts := []string{`resource.type="cloud_run_revision"`,
		"resource.labels.service_name=(" + strings.Join(services, " OR ") + ")"}
	for _, w := range m.conditions() {
		parts = append(parts, "jsonPayload."+w.Name+"="+logValue(w.Equals))
	}
	return strings.Join(parts, " AND ")
}

// conditions are the fields the lines must have: the event, then Where.
func (m LogMetric) conditions() []LogField {
	return append([]LogField{{Name: "event", Equals: m.Event}}, m.Where...)
}

// logValue writes a value in the Logging query language.
func logValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// LogMetrics are the log-based metrics both deployments create.
func LogMetrics() []LogMetric {
	return []LogMetric{
		{Name: "counters_increments_applied", Event: functions.EventIncrementsApplied, EntryPoints: []string{functions.EntryIncrement, functions.EntryIncrementFromPubSub},
			Value: "count", Unit: "1", Scale: 1, Labels: []string{"source"},
			Description: "Increments applied (not replays), by source (http, pubsub): a distribution of the per-instance, per-minute counts; its sum is the number applied."},
		{Name: "counters_increments_refused", Event: functions.EventIncrementsRefused, EntryPoints: []string{functions.EntryIncrement},
			Value: "count", Unit: "1", Scale: 1, Labels: []string{"reason"},
			Description: "Increments refused with a 4xx, by reason (id_token_invalid, app_check_missing, invalid_request, no_counter, ...): a distribution of the per-instance, per-minute counts; its sum is the number refused."},
		{Name: "counters_increment_outcome_unknown", Event: functions.EventIncrementOutcomeUnknown, EntryPoints: []string{functions.EntryIncrement},
			Description: "Increments answered 504: the database did not confirm them, and they may or may not have been applied."},
		{Name: "counters_rollup_age", Event: functions.EventRollupWritten, EntryPoints: []string{functions.EntryRollupOnShardWrite, functions.EntryRollupScheduled},
			Value: "age_seconds", Unit: "s", Scale: 0.1, Labels: []string{"source"},
			Description: "At each roll-up written, by source (trigger, scheduler): how long the roll-up it replaced had trailed the counter's first change since (the scheduler's: since that roll-up)."},
		{Name: "counters_sweep_stale", Event: functions.EventRollupSweep, EntryPoints: []string{functions.EntryRollupScheduled},
			Value: "stale", Unit: "1", Scale: 1,
			Description: "Per scheduled sweep: counters whose roll-up differed from the exact value (their trigger events were lost or failed)."},
		{Name: "counters_sweep_fixed", Event: functions.EventRollupSweep, EntryPoints: []string{functions.EntryRollupScheduled},
			Value: "written", Unit: "1", Scale: 1,
			Description: "Per scheduled sweep: roll-ups the sweep wrote."},
		{Name: "counters_sweep_runs", Event: functions.EventRollupSweep, EntryPoints: []string{functions.EntryRollupScheduled},
			Description: "Scheduled sweeps run, finished or not (one line each): the alert sweep_absent fires when none arrives."},
		{Name: "counters_sweep_unfinished", Event: functions.EventRollupSweep, EntryPoints: []string{functions.EntryRollupScheduled},
			Where:       []LogField{{Name: "done", Equals: false}},
			Description: "Scheduled sweeps that ran out of time or failed (the next one resumes where it stopped)."},
		{Name: "counters_fold_errors", Event: functions.EventFoldError, EntryPoints: []string{functions.EntryFoldExtensionShards},
			Labels:      []string{"kind"},
			Description: "Extension folds that failed and extension shards left unfolded, by kind (fold_failed, shard_left_unfolded, not_declared)."},
		{Name: "counters_collection_drift", Event: functions.EventCollectionDrift, EntryPoints: []string{functions.EntryRollupScheduled},
			Description: "Quiet collection counters the scheduled sweep found different from count()/sum() of their documents (sources repair fixes one)."},
		{Name: "counters_fold_waiting", Event: functions.EventFoldWaiting, EntryPoints: []string{functions.EntryFoldExtensionShards},
			Labels:      []string{"kind"},
			Description: "Extension shard events whose main document does not exist, by kind: waiting (the event is redelivered until the app creates it) or dropped (shards deleted uncounted after 24 h)."},
	}
}

// AlertPolicy is a Cloud Monitoring alert policy of one condition on the time series that Filter
// selects, aligned over Period with Aligner and reduced across series with Reducer (grouped by
// GroupBy): a threshold condition fires when they stay above Threshold for Duration; a metric-absence
// one (Absent) when they report no data for Threshold minutes.
type AlertPolicy struct {
	// Key names the policy: the user label counters_alert, the Terraform key and the gcloud path's file.
	Key string
	// DisplayName is the title shown in the console and in notifications.
	DisplayName string
	// Documentation is what the alert means and what to do (Markdown), sent with its notifications.
	Documentation string
	// Filter is the Cloud Monitoring time series filter.
	Filter string
	// Aligner and Reducer are Cloud Monitoring's per-series aligner and cross-series reducer.
	Aligner, Reducer string
	// GroupBy are the labels the reducer keeps (one incident per value).
	GroupBy []string
	// Period is the alignment period; Duration how long the condition must hold.
	Period, Duration time.Duration
	// Absent makes the condition a metric absence (Duration unused).
	Absent bool
	// Threshold is the default bound, in minutes without data when Absent; deployments may override
	// it (docs/operations.md, "Monitoring").
	Threshold float64
	// Unit says what Threshold counts, for the docs.
	Unit string
}

// AbsentFor is how long an Absent policy's series must report no data for it to fire.
func (p AlertPolicy) AbsentFor() time.Duration {
	return time.Duration(p.Threshold * float64(time.Minute))
}

// sweepAbsentPeriods is how many of the scheduler's periods without a sweep the alert sweep_absent
// waits for: enough that a late or failed tick or two does not fire it.
const sweepAbsentPeriods = 15

// sweepPeriod is the longest time between two scheduled sweeps, as the scheduler job is declared
// (Deployed); it panics if that declaration is not one Trigger.Period reads, so generating the
// deployments fails.
func sweepPeriod() time.Duration {
	f, _ := DeployedFunction(functions.EntryRollupScheduled)
	period, err := f.Trigger.Period()
	if err != nil {
		panic("the alert sweep_absent derives its duration from the sweep's " + err.Error())
	}
	return period
}

// every says how often something of period d happens, in words.
func every(d time.Duration) string {
	if d == time.Minute {
		return "each minute"
	}
	return fmt.Sprintf("every %g minutes", d.Minutes())
}

// metricFilter is a time series filter of a log-based metric on Cloud Run revisions, plus more.
func metricFilter(name string, more ...string) string {
	return strings.Join(append([]string{`metric.type="logging.googleapis.com/user/` + name + `"`, `resource.type="cloud_run_revision"`}, more...), " AND ")
}

// deployedServices is a filter term selecting the Cloud Run services of the deployed functions: each
// by its name, and a per-source function's, one per declared pattern (SourceFunctions), by the
// prefix their names share.
func deployedServices() string {
	var names, terms []string
	for _, f := range Deployed() {
		if f.PerSource {
			terms = append(terms, "resource.labels.service_name=starts_with("+strconv.Quote(f.Name+"-")+")")
			continue
		}
		names = append(names, strconv.Quote(f.Name))
	}
	terms = append([]string{"resource.labels.service_name=one_of(" + strings.Join(names, ", ") + ")"}, terms...)
	if len(terms) == 1 {
		return terms[0]
	}
	return "(" + strings.Join(terms, " OR ") + ")"
}

// AlertPolicies are the alert policies both deployments create.
func AlertPolicies() []AlertPolicy {
	sweepEvery := sweepPeriod()
	return []AlertPolicy{
		{Key: "rollup_age", DisplayName: "Counters: roll-ups trail their counters",
			Filter:  metricFilter("counters_rollup_age", `metric.labels.source="trigger"`),
			Aligner: "ALIGN_PERCENTILE_99", Reducer: "REDUCE_MAX", Period: 5 * time.Minute, Threshold: 60, Unit: "seconds (99th percentile over 5 minutes)",
			Documentation: "Roll-ups written by the shard-write trigger trailed their counters' changes by more than the threshold (99th percentile over 5 minutes): " +
				"roll-up events wait, fail or retry. Check the rollup-on-shard-write function's WARNING and ERROR lines and its instance count, " +
				"and Firestore's latency. docs/operations.md, \"Monitoring\"."},
		{Key: "dead_letter_backlog", DisplayName: "Counters: increments parked in the dead-letter topic",
			Filter:  `metric.type="pubsub.googleapis.com/subscription/num_undelivered_messages" AND resource.type="pubsub_subscription" AND resource.labels.subscription_id="` + shared.TopicIncrementsDeadLetter + `"`,
			Aligner: "ALIGN_MAX", Reducer: "REDUCE_MAX", Period: 5 * time.Minute, Threshold: 0, Unit: "messages",
			Documentation: "Increment messages that increment-from-pubsub failed on too often are parked in the " + shared.TopicIncrementsDeadLetter +
				" subscription, not counted. Read them (gcloud pubsub subscriptions pull " + shared.TopicIncrementsDeadLetter + " --limit=10), fix the cause " +
				"(the function's ERROR lines say it), then publish them again (their idempotency_key applies each once) and acknowledge them. docs/operations.md, \"Dead letters\"."},
		{Key: "outcome_unknown", DisplayName: "Counters: increments with an unknown outcome (504)",
			Filter:  metricFilter("counters_increment_outcome_unknown"),
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", Period: 5 * time.Minute, Threshold: 5, Unit: "504 answers in 5 minutes",
			Documentation: "Increment answered 504 more often than the threshold in 5 minutes: Firestore did not confirm the writes in time. " +
				"Clients that resend with the same Idempotency-Key lose nothing; others may count twice or not at all. " +
				"Check Firestore's status and latency and the increment function's ERROR lines. docs/operations.md, \"Monitoring\"."},
		{Key: "sweep_unfinished", DisplayName: "Counters: the scheduled sweep cannot finish",
			Filter:  metricFilter("counters_sweep_unfinished"),
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", Period: 15 * time.Minute, Threshold: 9, Unit: "unfinished sweeps in 15 minutes (one runs each minute)",
			Documentation: "Most scheduled sweeps of the last 15 minutes ran out of time or failed, so roll-ups that missed their trigger stay stale. " +
				"Read the rollup-scheduled function's lines (event rollup_sweep: counters, reads, done; WARNING and ERROR lines say why). docs/operations.md, \"Monitoring\"."},
		{Key: "sweep_absent", DisplayName: "Counters: the scheduled sweep has stopped running", Absent: true,
			Filter:  metricFilter("counters_sweep_runs"),
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", Period: sweepEvery,
			Threshold: sweepAbsentPeriods * sweepEvery.Minutes(), Unit: "minutes without a sweep (one runs " + every(sweepEvery) + ")",
			Documentation: "No scheduled sweep has run, finished or not, for longer than the threshold (one runs " + every(sweepEvery) + "): " +
				"roll-ups whose trigger events were lost stay stale. Check the Cloud Scheduler job " + shared.TopicRollupTick +
				" (gcloud scheduler jobs describe " + shared.TopicRollupTick + " --location=REGION: state ENABLED, lastAttemptTime, status), " +
				"the topic " + shared.TopicRollupTick + " and the rollup-scheduled function's trigger (gcloud functions describe rollup-scheduled --region=REGION), " +
				"and the function's ERROR lines and failed starts (it may fail before it logs). docs/operations.md, \"Monitoring\"."},
		{Key: "max_instances", DisplayName: "Counters: functions at their maximum instances (429)",
			Filter:  `metric.type="run.googleapis.com/request_count" AND resource.type="cloud_run_revision" AND metric.labels.response_code="429" AND ` + deployedServices(),
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", GroupBy: []string{"resource.labels.service_name"}, Period: 5 * time.Minute, Threshold: 10, Unit: "429 answers in 5 minutes, per function",
			Documentation: "A function answered 429 more often than the threshold in 5 minutes: it runs at its maximum instances and Cloud Run turns requests away " +
				"(clients retry; Pub/Sub and Eventarc redeliver). Raise its max instances (Terraform function_settings; internal/manifest/deployment.go for deploy.sh) " +
				"or find what drives the load. docs/operations.md, \"Production limits\"."},
	}
}

// Chart is one chart of the dashboard: lines from Cloud Monitoring time series (Filter, aligned over
// a minute with Aligner, reduced with Reducer by GroupBy) or from a PromQL query.
type Chart struct {
	Title string
	// Lines are the chart's data sets.
	Lines []ChartLine
}

// ChartLine is one data set of a Chart: PromQL, or a filter with its aggregation.
type ChartLine struct {
	PromQL           string
	Filter           string
	Aligner, Reducer string
	GroupBy          []string
}

// promSum is a PromQL query of the per-minute sum of the values of a log-based distribution metric,
// by label (none: "").
func promSum(metric, label string) string {
	by := ""
	if label != "" {
		by = " by (" + label + ")"
	}
	return "sum" + by + " (increase(logging_googleapis_com:user_" + metric + "_sum[1m]))"
}

// DashboardCharts are the charts of the dashboard both deployments create, in order.
func DashboardCharts() []Chart {
	perMinute := func(filter string, groupBy ...string) ChartLine {
		return ChartLine{Filter: filter, Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", GroupBy: groupBy}
	}
	return []Chart{
		{Title: "Increments applied per minute, by source", Lines: []ChartLine{{PromQL: promSum("counters_increments_applied", "source")}}},
		{Title: "Increments refused per minute, by reason", Lines: []ChartLine{{PromQL: promSum("counters_increments_refused", "reason")}}},
		{Title: "Unknown outcomes (504) per minute", Lines: []ChartLine{perMinute(metricFilter("counters_increment_outcome_unknown"))}},
		{Title: "Roll-up age, 99th percentile (s), by source", Lines: []ChartLine{{Filter: metricFilter("counters_rollup_age"),
			Aligner: "ALIGN_PERCENTILE_99", Reducer: "REDUCE_MAX", GroupBy: []string{"metric.label.source"}}}},
		{Title: "Sweep: stale roll-ups found and fixed per minute", Lines: []ChartLine{
			{PromQL: promSum("counters_sweep_stale", "")}, {PromQL: promSum("counters_sweep_fixed", "")}}},
		{Title: "Sweeps run and unfinished per minute", Lines: []ChartLine{
			perMinute(metricFilter("counters_sweep_runs")), perMinute(metricFilter("counters_sweep_unfinished"))}},
		{Title: "Dead letters: messages parked, and dead-lettered per minute", Lines: []ChartLine{
			{Filter: `metric.type="pubsub.googleapis.com/subscription/num_undelivered_messages" AND resource.type="pubsub_subscription" AND resource.labels.subscription_id="` + shared.TopicIncrementsDeadLetter + `"`,
				Aligner: "ALIGN_MAX", Reducer: "REDUCE_MAX"},
			perMinute(`metric.type="pubsub.googleapis.com/subscription/dead_letter_message_count" AND resource.type="pubsub_subscription"`)}},
		{Title: "Requests per minute by function and response class (429: at max instances)", Lines: []ChartLine{
			perMinute(`metric.type="run.googleapis.com/request_count" AND resource.type="cloud_run_revision" AND `+deployedServices(),
				"resource.label.service_name", "metric.label.response_code_class")}},
		{Title: "Instances per function", Lines: []ChartLine{{Filter: `metric.type="run.googleapis.com/container/instance_count" AND resource.type="cloud_run_revision" AND ` + deployedServices(),
			Aligner: "ALIGN_MAX", Reducer: "REDUCE_SUM", GroupBy: []string{"resource.label.service_name"}}}},
		{Title: "Extension fold errors per minute, by kind", Lines: []ChartLine{perMinute(metricFilter("counters_fold_errors"), "metric.label.kind")}},
		{Title: "Extension shard events waiting for their main document per minute, by kind", Lines: []ChartLine{perMinute(metricFilter("counters_fold_waiting"), "metric.label.kind")}},
	}
}
