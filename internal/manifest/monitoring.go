package manifest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/version"
)

// Monitoring: docs/operations.md, "Monitoring".

// Monitoring is one deployment's log metrics, SLOs, alert policies and dashboard; Prefix goes before
// resource names and MetricPrefix before metric names, so deployments can share a project.
type Monitoring struct{ Prefix, MetricPrefix, Project string }

// ProjectPlaceholder stands for the project in deploy.sh's files.
const ProjectPlaceholder = "PROJECT_ID"

// LogMetric is a log-based metric: a count of matching lines, or a distribution of Value.
type LogMetric struct {
	Name        string // without the prefix
	Description string
	EntryPoints []string
	// Event and Where are the fields matching lines have.
	Event  string
	Where  []LogField
	Value  string // "" counts lines
	Unit   string
	Scale  float64 // first bucket's bound
	Labels []string

	monitoring Monitoring
}

// LogField is a JSON payload field and its value.
type LogField struct {
	Name   string
	Equals any
}

// distributionBuckets is the number of doubling buckets.
const distributionBuckets = 32

// ID is the metric's ID.
func (m LogMetric) ID() string { return m.monitoring.MetricPrefix + m.Name }

// Type is the metric's type.
func (m LogMetric) Type() string { return "logging.googleapis.com/user/" + m.ID() }

// Buckets is the distribution's exponential buckets.
func (m LogMetric) Buckets() (count int, growth, scale float64) {
	return distributionBuckets, 2, m.Scale
}

// Filter is the metric's Cloud Logging query.
func (m LogMetric) Filter() string {
	var services []string
	for _, e := range m.EntryPoints {
		f, _ := DeployedFunction(e)
		services = append(services, strconv.Quote(m.monitoring.Prefix+f.Name))
	}
	parts := []string{`resource.type="cloud_run_revision"`,
		"resource.labels.service_name=(" + strings.Join(services, " OR ") + ")"}
	for _, w := range m.conditions() {
		parts = append(parts, "jsonPayload."+w.Name+"="+logValue(w.Equals))
	}
	return strings.Join(parts, " AND ")
}

func (m LogMetric) conditions() []LogField {
	return append([]LogField{{Name: "event", Equals: m.Event}}, m.Where...)
}

// logValue writes v in the Logging query language.
func logValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// LogMetrics are deploy.sh's log-based metrics.
func LogMetrics() []LogMetric { return Monitoring{}.LogMetrics() }

// LogMetrics are the log-based metrics of deployment n.
func (n Monitoring) LogMetrics() []LogMetric {
	metrics := []LogMetric{
		{Name: "counters_increments_applied", Event: functions.EventIncrementsApplied, EntryPoints: []string{functions.EntryIncrement, functions.EntryIncrementFromPubSub},
			Value: "count", Unit: "1", Scale: 1, Labels: []string{"source"},
			Description: "Increments applied (not replays), by source (http, pubsub): a distribution of the per-instance, per-minute counts; its sum is the number applied."},
		{Name: "counters_increments_refused", Event: functions.EventIncrementsRefused, EntryPoints: []string{functions.EntryIncrement},
			Value: "count", Unit: "1", Scale: 1, Labels: []string{"reason"},
			Description: "Increments refused with a 4xx, by reason (id_token_invalid, app_check_missing, invalid_request, no_counter, ...): a distribution of the per-instance, per-minute counts; its sum is the number refused."},
		{Name: "counters_increment_outcome_unknown", Event: functions.EventIncrementOutcomeUnknown, EntryPoints: []string{functions.EntryIncrement},
			Description: "Increments answered 504: the database did not confirm them, and they may or may not have been applied."},
		{Name: "counters_rollup_age", Event: functions.EventRollupWritten, EntryPoints: []string{functions.EntryRollupOnShardWrite, functions.EntryRollupScheduled},
			Value: "age_seconds_max", Unit: "s", Scale: 0.1, Labels: []string{"source"},
			Description: "Per instance, minute and source (trigger, scheduler): the largest age of the roll-ups written, how long each replaced roll-up had trailed the counter's first change since (the scheduler's: since that roll-up)."},
		{Name: "counters_rollup_canary", Event: functions.EventRollupCanary, EntryPoints: []string{functions.EntryRollupScheduled},
			Labels:      []string{"outcome"},
			Description: "Per scheduled sweep, by outcome: fresh when the shard-write trigger rolled up the canary counter's previous increment, stale when not (the freshness SLO)."},
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
		{Name: "counters_collection_canary", Event: functions.EventCollectionCanary, EntryPoints: []string{functions.EntryRollupScheduled},
			Labels:      []string{"outcome", "declaration"},
			Description: "Per scheduled sweep and declaration with \"canary\": true, by outcome: fresh when its count-documents trigger saw the previous probe document, stale when not."},
		{Name: "counters_collection_unverified", Event: functions.EventCollectionUnverified, EntryPoints: []string{functions.EntryRollupScheduled},
			Description: "Quiet collection counters the scheduled sweep could not verify (skipped; the others are still checked): sources verify names why."},
		{Name: "counters_collection_refused", Event: functions.EventCollectionRefused, EntryPoints: []string{functions.EntryCountDocumentWrite},
			Description: "Document writes whose counter ID names a counter their declaration did not create (an ordinary counter, or another declaration's): not counted there."},
		{Name: "counters_fold_waiting", Event: functions.EventFoldWaiting, EntryPoints: []string{functions.EntryFoldExtensionShards},
			Labels:      []string{"kind"},
			Description: "Extension shard events whose main document does not exist, by kind: waiting (the event is redelivered until the app creates it) or dropped (shards deleted uncounted after 24 h)."},
	}
	for i := range metrics {
		metrics[i].monitoring = n
	}
	return metrics
}

// SLO is a request-based SLO: at least Goal of Total are not Bad over Period.
type SLO struct {
	ID, DisplayName string
	Goal            float64
	Period          time.Duration
	Total, Bad      string
}

// SLOService is the ID of the service holding the SLOs.
func (n Monitoring) SLOService() string { return n.Prefix + "counters" }

// SLOName is the SLO id's resource name.
func (n Monitoring) SLOName(id string) string {
	return "projects/" + n.Project + "/services/" + n.SLOService() + "/serviceLevelObjectives/" + id
}

const (
	sloAvailability = "increment-availability"
	sloFreshness    = "rollup-freshness"
)

const sloPeriod = 28 * 24 * time.Hour

// SLOs are the SLOs of deployment n.
func (n Monitoring) SLOs() []SLO {
	requests := n.incrementRequests()
	canary := n.metricFilter("counters_rollup_canary")
	return []SLO{
		{ID: sloAvailability, DisplayName: "Increment answers without a 5xx", Goal: 0.999, Period: sloPeriod,
			Total: requests, Bad: requests + ` AND metric.labels.response_code_class="5xx"`},
		{ID: sloFreshness, DisplayName: "Roll-ups follow their counters: the canary is rolled up by the trigger", Goal: 0.99, Period: sloPeriod,
			Total: canary, Bad: canary + ` AND metric.labels.outcome="stale"`},
	}
}

func (n Monitoring) incrementRequests() string {
	f, _ := DeployedFunction(functions.EntryIncrement)
	return `metric.type="run.googleapis.com/request_count" AND resource.type="cloud_run_revision" AND resource.labels.service_name="` + n.Prefix + f.Name + `"`
}

// Notification classes of alert policies.
const (
	Page   = "page"
	Ticket = "ticket"
)

// AlertPolicy is an alert policy whose condition is Filter (over Denominator) above Threshold;
// no data for Threshold minutes (Absent); a log match (LogMatch); or SLOName's burn rate.
type AlertPolicy struct {
	Key           string
	DisplayName   string
	Documentation string // Markdown, ends with the runbook link
	Severity      string
	Notify        string // Page or Ticket
	Runbook       string // anchor in docs/operations.md
	// Filter is a Logging query for LogMatch.
	Filter, Denominator string
	Aligner, Reducer    string
	GroupBy             []string
	Period, Duration    time.Duration
	Absent              bool
	LogMatch            bool
	SLOName             string
	BurnWindows         []time.Duration
	Threshold           float64 // overridable default
	Unit                string
	// MinRequests: a ratio (or burn rate) of Increment's answers fires only when Requests counts
	// more than this in the ratio's window (FloorWindow).
	MinRequests float64
	Requests    string
	// What the documented cause makes of the condition at most: CausePerMinute events a minute
	// (a count over Period), or CauseMax (a share, seconds, a burn rate).
	CausePerMinute, CauseMax float64
}

// MinFailures is how many failed requests a ratio alert's window holds at least, at the default
// threshold, before it fires: a few by-design 503s (a busy database, an instance stopping) never page.
const MinFailures = 10

// MinRequestsCondition names the condition that holds a ratio alert back below MinRequests.
const MinRequestsCondition = "Enough Increment requests to judge"

// FloorWindow is the window MinRequests counts over: the ratio's Period, or the short burn window.
func (p AlertPolicy) FloorWindow() time.Duration {
	if len(p.BurnWindows) > 0 {
		return p.BurnWindows[len(p.BurnWindows)-1]
	}
	return p.Period
}

// minRequests is the request count at which share failing holds MinFailures.
func minRequests(share float64) float64 { return math.Ceil(MinFailures / share) }

// AbsentFor is how long without data fires an Absent policy.
func (p AlertPolicy) AbsentFor() time.Duration {
	return time.Duration(p.Threshold * float64(time.Minute))
}

// BurnRateFilter is p's SLO burn rate over window.
func (p AlertPolicy) BurnRateFilter(window time.Duration) string {
	return fmt.Sprintf("select_slo_burn_rate(%q, %q)", p.SLOName, fmt.Sprintf("%ds", int(window.Seconds())))
}

// span writes d in its largest whole unit.
func span(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	case d%time.Hour == 0:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d min", int(d.Minutes()))
}

// sweepAbsentPeriods is how many sweep periods without a sweep fire sweep_absent.
const sweepAbsentPeriods = 15

// sweepPeriod is the sweep's Trigger.Period; it panics on an unreadable schedule.
func sweepPeriod() time.Duration {
	f, _ := DeployedFunction(functions.EntryRollupScheduled)
	period, err := f.Trigger.Period()
	if err != nil {
		panic("the alert sweep_absent derives its duration from the sweep's " + err.Error())
	}
	return period
}

// every writes period d in words.
func every(d time.Duration) string {
	if d == time.Minute {
		return "each minute"
	}
	return fmt.Sprintf("every %g minutes", d.Minutes())
}

// oldestUnacked selects the age of the increments topic's oldest unacknowledged message.
func (n Monitoring) oldestUnacked() string {
	return `metric.type="pubsub.googleapis.com/topic/oldest_unacked_message_age_by_region" AND resource.type="pubsub_topic" AND resource.labels.topic_id="` +
		n.Prefix + shared.TopicIncrements + `"`
}

// metricFilter selects a log-based metric's time series, AND more.
func (n Monitoring) metricFilter(name string, more ...string) string {
	return strings.Join(append([]string{`metric.type="logging.googleapis.com/user/` + n.MetricPrefix + name + `"`, `resource.type="cloud_run_revision"`}, more...), " AND ")
}

// deployedServices selects the deployed functions' services but except's.
func (n Monitoring) deployedServices(except ...string) string {
	var names, terms []string
	for _, f := range Deployed() {
		switch {
		case slices.Contains(except, f.EntryPoint):
		case f.PerSource:
			terms = append(terms, "resource.labels.service_name=starts_with("+strconv.Quote(n.Prefix+f.Name+"-")+")")
		default:
			names = append(names, strconv.Quote(n.Prefix+f.Name))
		}
	}
	terms = append([]string{"resource.labels.service_name=one_of(" + strings.Join(names, ", ") + ")"}, terms...)
	if len(terms) == 1 {
		return terms[0]
	}
	return "(" + strings.Join(terms, " OR ") + ")"
}

// Runbook anchors of docs/operations.md.
const (
	runbookIncrements   = "runbook-increment-fails"
	runbookStart        = "runbook-functions-cannot-start"
	runbookRollups      = "runbook-roll-ups-lag"
	runbookSweep        = "runbook-the-sweep-stops"
	runbookDeadLetters  = "dead-letters"
	runbookMaxInstances = "production-limits"
	runbookPubSub       = "runbook-pubsub-increments-wait"
	runbookCollections  = "runbook-collection-counters-drift"
	runbookRefused      = "runbook-callers-are-refused"
)

// eventRetryBackoff is the longest wait between deliveries of a retried event (Eventarc, Pub/Sub push).
const eventRetryBackoff = 10 * time.Minute

// minDeliveryAttempts is the fewest deliveries Pub/Sub makes before it dead-letters a message.
const minDeliveryAttempts = 5

// deadLetteredAfter is how long a message failing every delivery waits before its last: backoff from
// 10 s, doubling up to eventRetryBackoff.
func deadLetteredAfter(attempts int) time.Duration {
	var total time.Duration
	for i, wait := 1, 10*time.Second; i < attempts; i, wait = i+1, min(2*wait, eventRetryBackoff) {
		total += wait
	}
	return total
}

// burnRates are the SRE workbook's multi-window burn-rate alerts.
var burnRates = []struct {
	suffix   string
	windows  []time.Duration
	rate     float64
	severity string
	notify   string
}{
	{"burn_fast", []time.Duration{time.Hour, 5 * time.Minute}, 14.4, "CRITICAL", Page},
	{"burn_slow", []time.Duration{6 * time.Hour, 30 * time.Minute}, 6, "ERROR", Page},
	{"budget", []time.Duration{3 * 24 * time.Hour, 6 * time.Hour}, 1, "WARNING", Ticket},
}

// AlertPolicies are deploy.sh's alert policies.
func AlertPolicies() []AlertPolicy { return Monitoring{Project: ProjectPlaceholder}.AlertPolicies() }

// AlertPolicies are the alert policies of deployment n.
func (n Monitoring) AlertPolicies() []AlertPolicy {
	sweepEvery := sweepPeriod()
	sweep, _ := DeployedFunction(functions.EntryRollupScheduled)
	sweepTimeout := sweep.Timeout
	deadLetters := n.Prefix + shared.TopicIncrementsDeadLetter
	requests := n.incrementRequests()
	policies := []AlertPolicy{
		{Key: "increment_5xx", DisplayName: "Counters: Increment refuses work (5xx)", Severity: "CRITICAL", Notify: Page, Runbook: runbookIncrements,
			Filter: requests + ` AND metric.labels.response_code_class="5xx"`, Denominator: requests,
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", Period: 5 * time.Minute, Duration: 5 * time.Minute, Threshold: 0.05, MinRequests: minRequests(0.05), Requests: requests, CauseMax: 1, Unit: "share of Increment's answers that are 5xx, over 5 minutes, for 5 minutes",
			Documentation: "Increment answers 5xx (503: Firestore refused, 500: a failure, 504: outcome unknown) to more than the threshold of its requests: callers cannot count. " +
				"Read the increment function's ERROR lines and Firestore's status."},
		{Key: "outcome_unknown", DisplayName: "Counters: increments with an unknown outcome (504)", Severity: "ERROR", Notify: Page, Runbook: runbookIncrements,
			Filter: requests + ` AND metric.labels.response_code="504"`, Denominator: requests,
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", Period: 5 * time.Minute, Duration: 10 * time.Minute, Threshold: 0.01, MinRequests: minRequests(0.01), Requests: requests, CauseMax: 1, Unit: "share of Increment's answers that are 504, over 5 minutes, for 10 minutes",
			Documentation: "Increment answered 504 to more than the threshold of its requests: Firestore did not confirm the writes in time. " +
				"Clients that resend with the same Idempotency-Key lose nothing; others may count twice or not at all. " +
				"Check Firestore's status and latency and the increment function's ERROR lines."},
		{Key: "function_critical", DisplayName: "Counters: a function cannot start (CRITICAL log entry)", Severity: "CRITICAL", Notify: Page, Runbook: runbookStart,
			Filter:   `resource.type="cloud_run_revision" AND ` + n.deployedServices() + ` AND severity=CRITICAL`,
			LogMatch: true, Period: 5 * time.Minute, Unit: "none: any CRITICAL entry (at most one notification per 5 minutes)",
			Documentation: "A function logged at CRITICAL: it cannot start (\"function cannot start\": a setting it refuses, Firestore unreachable at start-up) and answers every request with 500. " +
				"Read the entry's error, fix the setting and deploy again, or roll back."},
		{Key: "trigger_dead", DisplayName: "Counters: the shard-write trigger does not roll up", Severity: "CRITICAL", Notify: Page, Runbook: runbookRollups,
			Filter:  n.metricFilter("counters_rollup_canary", `metric.labels.outcome="stale"`),
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", Period: 10 * time.Minute, Duration: 5 * time.Minute, Threshold: 2, CausePerMinute: 1 / sweepEvery.Minutes(), Unit: "stale canary checks in 10 minutes (one " + every(sweepEvery) + "), for 5 minutes",
			Documentation: "The scheduled sweep found the canary counter's roll-up behind its value more often than the threshold: the rollup-on-shard-write trigger does not roll up, " +
				"and roll-ups wait for the sweep. Check the trigger (gcloud functions describe rollup-on-shard-write --region=REGION), its ERROR lines and its instance count."},
		{Key: "rollup_age", DisplayName: "Counters: roll-ups trail their counters", Severity: "WARNING", Notify: Ticket, Runbook: runbookRollups,
			Filter:  n.metricFilter("counters_rollup_age", `metric.labels.source="trigger"`),
			Aligner: "ALIGN_PERCENTILE_99", Reducer: "REDUCE_MAX", Period: 5 * time.Minute, Duration: 15 * time.Minute, Threshold: 60, CauseMax: eventRetryBackoff.Seconds(), Unit: "seconds (99th percentile of per-instance maxima over 5 minutes, for 15 minutes)",
			Documentation: "Roll-ups written by the shard-write trigger trailed their counters' changes by more than the threshold: " +
				"roll-up events wait, fail or retry. Check the rollup-on-shard-write function's WARNING and ERROR lines and its instance count, and Firestore's latency."},
		{Key: "dead_letter_backlog", DisplayName: "Counters: increments parked in the dead-letter topic", Severity: "WARNING", Notify: Ticket, Runbook: runbookDeadLetters,
			Filter:  `metric.type="pubsub.googleapis.com/subscription/num_undelivered_messages" AND resource.type="pubsub_subscription" AND resource.labels.subscription_id="` + deadLetters + `"`,
			Aligner: "ALIGN_MAX", Reducer: "REDUCE_MAX", Period: 5 * time.Minute, Duration: 5 * time.Minute, Threshold: 0, CauseMax: 1, Unit: "messages (for 5 minutes)",
			Documentation: "Increment messages that increment-from-pubsub failed on too often are parked in the " + deadLetters +
				" subscription, not counted. Read them, fix the cause (the function's ERROR lines say it), then publish them again (their idempotency_key applies each once) and acknowledge them."},
		{Key: "sweep_unfinished", DisplayName: "Counters: the scheduled sweep cannot finish", Severity: "WARNING", Notify: Ticket, Runbook: runbookSweep,
			Filter:  n.metricFilter("counters_sweep_unfinished"),
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", Period: 15 * time.Minute, Duration: 15 * time.Minute, Threshold: 1, CausePerMinute: 1 / sweepTimeout.Minutes(),
			Unit: "unfinished sweeps in 15 minutes (one out of time ends every " + span(sweepTimeout) + " at most), for 15 minutes",
			Documentation: "Most scheduled sweeps ran out of time or failed, so roll-ups that missed their trigger stay stale. " +
				"Read the rollup-scheduled function's lines (event rollup_sweep: counters, reads, done; WARNING and ERROR lines say why)."},
		{Key: "sweep_absent", DisplayName: "Counters: the scheduled sweep has stopped running", Severity: "ERROR", Notify: Page, Runbook: runbookSweep, Absent: true,
			Filter:  n.metricFilter("counters_sweep_runs"),
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", Period: sweepEvery,
			Threshold: sweepAbsentPeriods * sweepEvery.Minutes(), Unit: "minutes without a sweep (one runs " + every(sweepEvery) + ")",
			Documentation: "No scheduled sweep has run, finished or not, for longer than the threshold (one runs " + every(sweepEvery) + "): " +
				"roll-ups whose trigger events were lost stay stale, and the freshness SLO has no data. Check the Cloud Scheduler job, its topic, the rollup-scheduled function's trigger and its failed starts."},
		{Key: "max_instances", DisplayName: "Counters: functions at their maximum instances (429)", Severity: "WARNING", Notify: Ticket, Runbook: runbookMaxInstances,
			Filter:  `metric.type="run.googleapis.com/request_count" AND resource.type="cloud_run_revision" AND metric.labels.response_code="429" AND ` + n.deployedServices(functions.EntryRollupScheduled),
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", GroupBy: []string{"resource.labels.service_name"}, Period: 5 * time.Minute, Duration: 10 * time.Minute, Threshold: 10, CausePerMinute: math.Inf(1), Unit: "429 answers in 5 minutes, per function, for 10 minutes",
			Documentation: "A function answered 429 more often than the threshold: it runs at its maximum instances and Cloud Run turns requests away " +
				"(clients retry; Pub/Sub and Eventarc redeliver). Raise its max instances or find what drives the load. " +
				"The scheduled sweep is left out: it turns away overlapping ticks by design."},
		{Key: "pubsub_backlog", DisplayName: "Counters: Pub/Sub increments wait unacknowledged", Severity: "ERROR", Notify: Page, Runbook: runbookPubSub,
			Filter:  n.oldestUnacked(),
			Aligner: "ALIGN_MAX", Reducer: "REDUCE_MAX", Period: 5 * time.Minute, Duration: 5 * time.Minute, Threshold: 120, CauseMax: deadLetteredAfter(minDeliveryAttempts).Seconds(),
			Unit: "seconds, the age of the oldest unacknowledged increment message (for 5 minutes)",
			Documentation: "The oldest increment message on the " + n.Prefix + shared.TopicIncrements + " topic waited longer than the threshold: increment-from-pubsub fails, refuses or is not called, " +
				"and messages are retried, then dead-lettered. Check the function's state, its ERROR lines and its push subscription."},
		{Key: "collection_drift", DisplayName: "Counters: collection counters differ from their documents", Severity: "ERROR", Notify: Page, Runbook: runbookCollections,
			Filter:  n.metricFilter("counters_collection_drift"),
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", Period: 10 * time.Minute, Duration: 5 * time.Minute, Threshold: 2, CausePerMinute: 1 / sweepEvery.Minutes(),
			Unit: "collection counters found unlike their documents in 10 minutes (the sweep checks " + every(sweepEvery) + "), for 5 minutes",
			Documentation: "The scheduled sweep found quiet collection counters unlike count()/sum() of their documents more often than the threshold, and repaired them: " +
				"a count-documents trigger is dead, failing or missing its events. Check the count-documents functions and their ERROR lines."},
		{Key: "collection_trigger_dead", DisplayName: "Counters: a collection counters' trigger misses its probes", Severity: "CRITICAL", Notify: Page, Runbook: runbookCollections,
			Filter:  n.metricFilter("counters_collection_canary", `metric.labels.outcome="stale"`),
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", GroupBy: []string{"metric.label.declaration"}, Period: 10 * time.Minute, Duration: 5 * time.Minute, Threshold: 2, CausePerMinute: 1 / sweepEvery.Minutes(),
			Unit: "stale probes of one declaration in 10 minutes (one " + every(sweepEvery) + "), for 5 minutes",
			Documentation: "The scheduled sweep found, more often than the threshold, that a declaration's count-documents trigger did not see the probe document written a sweep before: " +
				"the trigger is dead or its events are lost, and its collection counters stop following their documents. Check the count-documents functions, their triggers and ERROR lines."},
		{Key: "increment_refused", DisplayName: "Counters: Increment refuses callers (401, 403, 429)", Severity: "ERROR", Notify: Page, Runbook: runbookRefused,
			Filter: requests + ` AND metric.labels.response_code=one_of("401", "403", "429")`, Denominator: requests,
			Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", Period: 5 * time.Minute, Duration: 10 * time.Minute, Threshold: 0.2, MinRequests: minRequests(0.2), Requests: requests, CauseMax: 1,
			Unit: "share of Increment's answers that are 401, 403 or 429, over 5 minutes, for 10 minutes",
			Documentation: "Increment refused more than the threshold of its requests with 401, 403 (tokens, App Check, IAM) or 429 (max instances): " +
				"a setting refuses good callers, or the function cannot scale. Read the increments_refused lines by reason, and the 429s."},
		{Key: "function_crash", DisplayName: "Counters: a function crashes (exit, memory limit, panic)", Severity: "ERROR", Notify: Page, Runbook: runbookStart,
			Filter: `resource.type="cloud_run_revision" AND ` + n.deployedServices() + ` AND ((log_id("run.googleapis.com/varlog/system") AND ` +
				`(textPayload:"Container called exit(" OR textPayload:"Memory limit of") AND NOT textPayload:"exit(0)") OR (log_id("run.googleapis.com/stderr") AND textPayload:"panic"))`,
			LogMatch: true, Period: 5 * time.Minute, Unit: "none: any crash line (at most one notification per 5 minutes)",
			Documentation: "An instance of a function exited, was killed at its memory limit, or panicked: requests in flight failed, and a crash loop fails them all. " +
				"Read the entry and the instance's last lines; raise the memory or roll back."},
	}
	for _, slo := range n.SLOs() {
		key := strings.SplitN(slo.ID, "-", 2)[1]
		runbook := runbookIncrements
		if slo.ID == sloFreshness {
			runbook = runbookRollups
		}
		for _, b := range burnRates {
			var floor float64
			var floorFilter string
			if slo.Total == requests { // a burn rate b.rate is a share b.rate*(1-Goal) of requests failing
				floor, floorFilter = minRequests(b.rate*(1-slo.Goal)), requests
			}
			policies = append(policies, AlertPolicy{MinRequests: floor, Requests: floorFilter, Key: key + "_" + b.suffix, Severity: b.severity, Notify: b.notify, Runbook: runbook,
				DisplayName: fmt.Sprintf("Counters: SLO %q burns its error budget at %gx", slo.DisplayName, b.rate),
				SLOName:     n.SLOName(slo.ID), BurnWindows: b.windows, Duration: time.Minute, Threshold: b.rate, CauseMax: 1 / (1 - slo.Goal),
				Unit: fmt.Sprintf("times the sustainable burn rate, over %s and %s", span(b.windows[0]), span(b.windows[1])),
				Documentation: fmt.Sprintf("The SLO %q (%g%% over %d days) burned its error budget faster than the threshold over both %s and %s: at this rate the budget lasts %.1f days. ",
					slo.DisplayName, slo.Goal*100, int(slo.Period.Hours()/24), span(b.windows[0]), span(b.windows[1]), slo.Period.Hours()/24/b.rate) +
					"The other alerts of the runbook say where."})
		}
	}
	for i := range policies {
		policies[i].Documentation += "\n\nRunbook: " + version.DocURL("docs/operations.md#"+policies[i].Runbook)
	}
	return policies
}

// Chart is one chart of the dashboard.
type Chart struct {
	Title string
	Lines []ChartLine
}

// ChartLine is one data set of a Chart: PromQL, or Filter aligned per minute.
type ChartLine struct {
	PromQL           string
	Filter           string
	Aligner, Reducer string
	GroupBy          []string
}

// promSum is PromQL of a distribution's per-minute sum, by label ("": none).
func (n Monitoring) promSum(metric, label string) string {
	by := ""
	if label != "" {
		by = " by (" + label + ")"
	}
	return "sum" + by + " (increase(logging_googleapis_com:user_" + n.MetricPrefix + metric + "_sum[1m]))"
}

// DashboardCharts are deploy.sh's dashboard charts.
func DashboardCharts() []Chart { return Monitoring{}.DashboardCharts() }

// DashboardCharts are the dashboard charts of deployment n.
func (n Monitoring) DashboardCharts() []Chart {
	perMinute := func(filter string, groupBy ...string) ChartLine {
		return ChartLine{Filter: filter, Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM", GroupBy: groupBy}
	}
	return []Chart{
		{Title: "Increments applied per minute, by source", Lines: []ChartLine{{PromQL: n.promSum("counters_increments_applied", "source")}}},
		{Title: "Increments refused per minute, by reason", Lines: []ChartLine{{PromQL: n.promSum("counters_increments_refused", "reason")}}},
		{Title: "Unknown outcomes (504) per minute", Lines: []ChartLine{perMinute(n.metricFilter("counters_increment_outcome_unknown"))}},
		{Title: "Roll-up age, 99th percentile of per-instance maxima (s), by source", Lines: []ChartLine{{Filter: n.metricFilter("counters_rollup_age"),
			Aligner: "ALIGN_PERCENTILE_99", Reducer: "REDUCE_MAX", GroupBy: []string{"metric.label.source"}}}},
		{Title: "Canary checks per minute, by outcome (stale: the trigger did not roll up)", Lines: []ChartLine{perMinute(n.metricFilter("counters_rollup_canary"), "metric.label.outcome")}},
		{Title: "Sweep: stale roll-ups found and fixed per minute", Lines: []ChartLine{
			{PromQL: n.promSum("counters_sweep_stale", "")}, {PromQL: n.promSum("counters_sweep_fixed", "")}}},
		{Title: "Sweeps run and unfinished per minute", Lines: []ChartLine{
			perMinute(n.metricFilter("counters_sweep_runs")), perMinute(n.metricFilter("counters_sweep_unfinished"))}},
		{Title: "Dead letters: messages parked, and dead-lettered per minute", Lines: []ChartLine{
			{Filter: `metric.type="pubsub.googleapis.com/subscription/num_undelivered_messages" AND resource.type="pubsub_subscription" AND resource.labels.subscription_id="` + n.Prefix + shared.TopicIncrementsDeadLetter + `"`,
				Aligner: "ALIGN_MAX", Reducer: "REDUCE_MAX"},
			perMinute(`metric.type="pubsub.googleapis.com/subscription/dead_letter_message_count" AND resource.type="pubsub_subscription"`)}},
		{Title: "Requests per minute by function and response class (429: at max instances)", Lines: []ChartLine{
			perMinute(`metric.type="run.googleapis.com/request_count" AND resource.type="cloud_run_revision" AND `+n.deployedServices(),
				"resource.label.service_name", "metric.label.response_code_class")}},
		{Title: "Instances per function", Lines: []ChartLine{{Filter: `metric.type="run.googleapis.com/container/instance_count" AND resource.type="cloud_run_revision" AND ` + n.deployedServices(),
			Aligner: "ALIGN_MAX", Reducer: "REDUCE_SUM", GroupBy: []string{"resource.label.service_name"}}}},
		{Title: "Collection counters per minute: drifted (repaired by the sweep), unverified, writes refused", Lines: []ChartLine{
			perMinute(n.metricFilter("counters_collection_drift")), perMinute(n.metricFilter("counters_collection_unverified")),
			perMinute(n.metricFilter("counters_collection_refused"))}},
		{Title: "Collection trigger probes per minute, by declaration and outcome (stale: the trigger did not see the probe)", Lines: []ChartLine{
			perMinute(n.metricFilter("counters_collection_canary"), "metric.label.declaration", "metric.label.outcome")}},
		{Title: "Pub/Sub: age of the oldest unacknowledged increment message (s)", Lines: []ChartLine{
			{Filter: n.oldestUnacked(),
				Aligner: "ALIGN_MAX", Reducer: "REDUCE_MAX"}}},
		{Title: "Extension fold errors per minute, by kind", Lines: []ChartLine{perMinute(n.metricFilter("counters_fold_errors"), "metric.label.kind")}},
		{Title: "Extension shard events waiting for their main document per minute, by kind", Lines: []ChartLine{perMinute(n.metricFilter("counters_fold_waiting"), "metric.label.kind")}},
	}
}
