package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/shardcount/counters/internal/manifest"
)

// The monitoring files: one LogMetric per file for `gcloud logging metrics create|update
// --config-from-file`, one AlertPolicy per file for `gcloud alpha monitoring policies
// create|update --policy`, the dashboard for `gcloud monitoring dashboards create|update --config`
// (each in the REST API's JSON; the last two on one line), the SLO service and one SLO per file for
// the Service Monitoring API, and the same as Terraform locals.
const (
	monitoringDir     = "scripts/monitoring"
	monitoringTF      = "terraform/monitoring.gen.tf.json"
	dashboardFile     = monitoringDir + "/dashboard.json"
	serviceFile       = monitoringDir + "/service.json"
	dashboardTitle    = "Distributed counters"
	alertLabel        = "counters_alert"
	notifyLabel       = "counters_notify"
	dashboardColumns  = 48
	dashboardTileSize = 24
)

// tfMonitoring names Terraform's monitoring after the module's locals (terraform/monitoring.tf).
var tfMonitoring = manifest.Monitoring{Prefix: "${local.name_prefix}", MetricPrefix: "${local.metric_prefix}", Project: "${var.project_id}"}

func init() {
	for _, m := range manifest.LogMetrics() {
		Outputs = append(Outputs, metricFile(m))
	}
	for _, p := range manifest.AlertPolicies() {
		Outputs = append(Outputs, policyFile(p))
	}
	for _, slo := range (manifest.Monitoring{}).SLOs() {
		Outputs = append(Outputs, sloFile(slo))
	}
	Outputs = append(Outputs, dashboardFile, serviceFile, monitoringTF)
}

func metricFile(m manifest.LogMetric) string {
	return path.Join(monitoringDir, "metrics", m.Name+".json")
}
func policyFile(p manifest.AlertPolicy) string {
	return path.Join(monitoringDir, "policies", p.Key+".json")
}
func sloFile(slo manifest.SLO) string {
	return path.Join(monitoringDir, "slos", slo.ID+".json")
}

// seconds is d as the API's Duration ("300s").
func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }

// logMetricJSON is m as the Logging API's LogMetric.
func logMetricJSON(m manifest.LogMetric) map[string]any {
	descriptor := map[string]any{"metricKind": "DELTA", "valueType": "INT64", "unit": "1"}
	out := map[string]any{"name": m.ID(), "description": m.Description, "filter": m.Filter(), "metricDescriptor": descriptor}
	if m.Value != "" {
		n, growth, scale := m.Buckets()
		descriptor["valueType"], descriptor["unit"] = "DISTRIBUTION", m.Unit
		out["valueExtractor"] = "EXTRACT(jsonPayload." + m.Value + ")"
		out["bucketOptions"] = map[string]any{"exponentialBuckets": map[string]any{"numFiniteBuckets": n, "growthFactor": growth, "scale": scale}}
	}
	if len(m.Labels) > 0 {
		var labels []map[string]any
		extractors := map[string]string{}
		for _, l := range m.Labels {
			labels = append(labels, map[string]any{"key": l, "valueType": "STRING"})
			extractors[l] = "EXTRACT(jsonPayload." + l + ")"
		}
		descriptor["labels"] = labels
		out["labelExtractors"] = extractors
	}
	return out
}

// condition is one condition of an alert policy, in the shape both renderings read: Kind is
// "threshold", "absent" or "log_match"; Aligner is "" for a burn-rate threshold (no aggregation);
// Threshold is nil for the policy's (overridable) threshold, else fixed, as Name is then.
type condition struct {
	Kind, Filter, Denominator, Aligner, Reducer string
	GroupBy                                     []string
	Period, Duration                            time.Duration
	Threshold                                   *float64
	Name                                        string
}

// conditions are p's conditions, and how they combine; a minimum request count comes last, ANDed.
func conditions(p manifest.AlertPolicy) (combiner string, out []condition) {
	base := condition{Kind: "threshold", Filter: p.Filter, Denominator: p.Denominator, Aligner: p.Aligner, Reducer: p.Reducer,
		GroupBy: p.GroupBy, Period: p.Period, Duration: p.Duration}
	combiner, out = "OR", []condition{base}
	switch {
	case p.Absent:
		out[0].Kind, out[0].Duration = "absent", p.AbsentFor()
	case p.LogMatch:
		out[0] = condition{Kind: "log_match", Filter: p.Filter}
	case len(p.BurnWindows) > 0:
		combiner, out = "AND", nil
		for _, w := range p.BurnWindows {
			out = append(out, condition{Kind: "threshold", Filter: p.BurnRateFilter(w), Duration: p.Duration})
		}
	}
	if p.MinRequests > 0 {
		combiner = "AND"
		out = append(out, condition{Kind: "threshold", Filter: p.Requests, Aligner: "ALIGN_SUM", Reducer: "REDUCE_SUM",
			Period: p.FloorWindow(), Duration: p.Duration, Threshold: &p.MinRequests, Name: manifest.MinRequestsCondition})
	}
	return combiner, out
}

// conditionName is c's display name in policy p.
func conditionName(p manifest.AlertPolicy, c condition) string {
	if c.Name != "" {
		return c.Name
	}
	return p.DisplayName
}

// alertPolicyJSON is p as the Monitoring API's AlertPolicy.
func alertPolicyJSON(p manifest.AlertPolicy) map[string]any {
	combiner, conds := conditions(p)
	var out []any
	for _, c := range conds {
		cond := map[string]any{"displayName": conditionName(p, c)}
		aggregations := []any{}
		if c.Aligner != "" {
			aggregation := map[string]any{"alignmentPeriod": seconds(c.Period), "perSeriesAligner": c.Aligner, "crossSeriesReducer": c.Reducer}
			if len(c.GroupBy) > 0 {
				aggregation["groupByFields"] = c.GroupBy
			}
			aggregations = append(aggregations, aggregation)
		}
		switch c.Kind {
		case "log_match":
			cond["conditionMatchedLog"] = map[string]any{"filter": c.Filter}
		case "absent":
			cond["conditionAbsent"] = map[string]any{"filter": c.Filter, "duration": seconds(c.Duration), "aggregations": aggregations, "trigger": map[string]any{"count": 1}}
		default:
			value := p.Threshold
			if c.Threshold != nil {
				value = *c.Threshold
			}
			threshold := map[string]any{"filter": c.Filter, "comparison": "COMPARISON_GT", "thresholdValue": value,
				"duration": seconds(c.Duration), "trigger": map[string]any{"count": 1}}
			if len(aggregations) > 0 {
				threshold["aggregations"] = aggregations
			}
			if c.Denominator != "" {
				threshold["denominatorFilter"], threshold["denominatorAggregations"] = c.Denominator, aggregations
			}
			cond["conditionThreshold"] = threshold
		}
		out = append(out, cond)
	}
	policy := map[string]any{
		"displayName":   p.DisplayName,
		"documentation": map[string]any{"content": p.Documentation, "mimeType": "text/markdown"},
		"userLabels":    map[string]string{alertLabel: p.Key, notifyLabel: p.Notify},
		"severity":      p.Severity,
		"combiner":      combiner,
		"enabled":       true,
		"conditions":    out,
	}
	if p.LogMatch {
		policy["alertStrategy"] = map[string]any{"notificationRateLimit": map[string]any{"period": seconds(p.Period)}, "autoClose": seconds(30 * time.Minute)}
	}
	return policy
}

// sloJSON is slo as the Service Monitoring API's ServiceLevelObjective (its ID is in the URL).
func sloJSON(slo manifest.SLO) map[string]any {
	return map[string]any{"displayName": slo.DisplayName, "goal": slo.Goal, "rollingPeriod": seconds(slo.Period),
		"serviceLevelIndicator": map[string]any{"requestBased": map[string]any{"goodTotalRatio": map[string]any{
			"totalServiceFilter": slo.Total, "badServiceFilter": slo.Bad}}}}
}

// dashboardJSON is the dashboard of a deployment named n as the Monitoring API's Dashboard (without
// its name): the charts two per row.
func dashboardJSON(n manifest.Monitoring) map[string]any {
	var tiles []any
	for i, c := range n.DashboardCharts() {
		var sets []any
		for _, l := range c.Lines {
			query := map[string]any{"prometheusQuery": l.PromQL}
			if l.PromQL == "" {
				aggregation := map[string]any{"alignmentPeriod": "60s", "perSeriesAligner": l.Aligner, "crossSeriesReducer": l.Reducer}
				if len(l.GroupBy) > 0 {
					aggregation["groupByFields"] = l.GroupBy
				}
				query = map[string]any{"timeSeriesFilter": map[string]any{"filter": l.Filter, "aggregation": aggregation}}
			}
			sets = append(sets, map[string]any{"timeSeriesQuery": query, "plotType": "LINE"})
		}
		tiles = append(tiles, map[string]any{
			"xPos": (i % 2) * dashboardTileSize, "yPos": (i / 2) * dashboardTileSize / 2,
			"width": dashboardTileSize, "height": dashboardTileSize / 2,
			"widget": map[string]any{"title": c.Title, "xyChart": map[string]any{"dataSets": sets}},
		})
	}
	return map[string]any{"displayName": n.Prefix + dashboardTitle, "mosaicLayout": map[string]any{"columns": dashboardColumns, "tiles": tiles}}
}

// tfMetric is a log-based metric as terraform/monitoring.tf reads it.
type tfMetric struct {
	Description     string            `json:"description"`
	Filter          string            `json:"filter"`
	ValueType       string            `json:"value_type"`
	Unit            string            `json:"unit"`
	ValueExtractor  *string           `json:"value_extractor"`
	Labels          []string          `json:"labels"`
	LabelExtractors map[string]string `json:"label_extractors"`
	Buckets         *tfBuckets        `json:"buckets"`
}

type tfBuckets struct {
	Count  int     `json:"num_finite_buckets"`
	Growth float64 `json:"growth_factor"`
	Scale  float64 `json:"scale"`
}

// tfPolicy is an alert policy as terraform/monitoring.tf reads it: Threshold is the threshold
// conditions' value, and an absence condition's minutes (Absent); RateLimit a log match's.
type tfPolicy struct {
	Label         string        `json:"label"` // counters_alert's value: the key, prefixed
	DisplayName   string        `json:"display_name"`
	Documentation string        `json:"documentation"`
	Severity      string        `json:"severity"`
	Notify        string        `json:"notify"`
	Combiner      string        `json:"combiner"`
	Threshold     float64       `json:"threshold"`
	Absent        bool          `json:"absent"`
	RateLimit     *string       `json:"rate_limit"`
	Conditions    []tfCondition `json:"conditions"`
}

// tfCondition is a condition as terraform/monitoring.tf reads it (every key in every condition).
type tfCondition struct {
	Kind        string   `json:"kind"`
	DisplayName string   `json:"display_name"`
	Threshold   *float64 `json:"threshold"` // nil: the policy's
	Filter      string   `json:"filter"`
	Denominator *string  `json:"denominator"`
	Aligner     *string  `json:"aligner"`
	Reducer     *string  `json:"reducer"`
	GroupBy     []string `json:"group_by"`
	Period      *string  `json:"period"`
	Duration    *string  `json:"duration"`
}

// tfSLO is an SLO as terraform/monitoring.tf reads it.
type tfSLO struct {
	DisplayName string  `json:"display_name"`
	Goal        float64 `json:"goal"`
	PeriodDays  int     `json:"rolling_period_days"`
	Total       string  `json:"total"`
	Bad         string  `json:"bad"`
}

// orNil is &s, or nil for "".
func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// tfPolicyOf is p as terraform/monitoring.tf reads it.
func tfPolicyOf(p manifest.AlertPolicy) tfPolicy {
	combiner, conds := conditions(p)
	tp := tfPolicy{Label: tfMonitoring.Prefix + p.Key, DisplayName: p.DisplayName, Documentation: p.Documentation, Severity: p.Severity, Notify: p.Notify,
		Combiner: combiner, Threshold: p.Threshold, Absent: p.Absent}
	if p.LogMatch {
		tp.RateLimit = orNil(seconds(p.Period))
	}
	for _, c := range conds {
		tc := tfCondition{Kind: c.Kind, DisplayName: conditionName(p, c), Threshold: c.Threshold, Filter: c.Filter, Denominator: orNil(c.Denominator), GroupBy: c.GroupBy}
		if tc.GroupBy == nil {
			tc.GroupBy = []string{}
		}
		if c.Aligner != "" {
			tc.Aligner, tc.Reducer, tc.Period = orNil(c.Aligner), orNil(c.Reducer), orNil(seconds(c.Period))
		}
		if c.Kind != "log_match" {
			tc.Duration = orNil(seconds(c.Duration))
		}
		tp.Conditions = append(tp.Conditions, tc)
	}
	return tp
}

// monitoringFiles renders every monitoring output.
func monitoringFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	add := func(name string, v any) error {
		out, err := json.MarshalIndent(v, "", "  ")
		if compact := strings.Contains(name, "/policies/") || name == dashboardFile; compact {
			out, err = json.Marshal(v) // deploy.sh passes it as one word (--policy, --config)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		files[name] = append(out, '\n')
		return nil
	}
	for _, m := range manifest.LogMetrics() {
		for _, e := range m.EntryPoints {
			if _, ok := manifest.DeployedFunction(e); !ok {
				return nil, fmt.Errorf("log metric %s: %q is not a deployed entry point", m.Name, e)
			}
		}
		if err := add(metricFile(m), logMetricJSON(m)); err != nil {
			return nil, err
		}
	}
	metrics := map[string]tfMetric{}
	for _, m := range tfMonitoring.LogMetrics() {
		tm := tfMetric{Description: m.Description, Filter: m.Filter(), ValueType: "INT64", Unit: "1", Labels: m.Labels, LabelExtractors: map[string]string{}}
		if m.Value != "" {
			n, growth, scale := m.Buckets()
			extractor := "EXTRACT(jsonPayload." + m.Value + ")"
			tm.ValueType, tm.Unit, tm.ValueExtractor, tm.Buckets = "DISTRIBUTION", m.Unit, &extractor, &tfBuckets{n, growth, scale}
		}
		for _, l := range m.Labels {
			tm.LabelExtractors[l] = "EXTRACT(jsonPayload." + l + ")"
		}
		if tm.Labels == nil {
			tm.Labels = []string{}
		}
		metrics[m.Name] = tm
	}
	for _, p := range manifest.AlertPolicies() {
		if p.MinRequests > 0 && p.MinRequests == p.Threshold { // deploy.sh overrides thresholdValues equal to the policy's
			return nil, fmt.Errorf("alert policy %s: its minimum request count equals its threshold %g", p.Key, p.Threshold)
		}
		if err := add(policyFile(p), alertPolicyJSON(p)); err != nil {
			return nil, err
		}
	}
	policies := map[string]tfPolicy{}
	for _, p := range tfMonitoring.AlertPolicies() {
		policies[p.Key] = tfPolicyOf(p)
	}
	for _, slo := range (manifest.Monitoring{}).SLOs() {
		if err := add(sloFile(slo), sloJSON(slo)); err != nil {
			return nil, err
		}
	}
	slos := map[string]tfSLO{}
	for _, slo := range tfMonitoring.SLOs() {
		slos[slo.ID] = tfSLO{DisplayName: slo.DisplayName, Goal: slo.Goal, PeriodDays: int(slo.Period.Hours() / 24), Total: slo.Total, Bad: slo.Bad}
	}
	if err := add(dashboardFile, dashboardJSON(manifest.Monitoring{})); err != nil {
		return nil, err
	}
	if err := add(serviceFile, map[string]any{"displayName": dashboardTitle, "custom": map[string]any{}}); err != nil {
		return nil, err
	}
	doc := map[string]any{
		"//": generated,
		"locals": map[string]any{"monitoring": map[string]any{
			"//":             "The log-based metrics, SLOs, alert policies and dashboard terraform/monitoring.tf creates. Change the Go declarations (internal/manifest/monitoring.go), then `go generate ./...`.",
			"alert_label":    alertLabel,
			"notify_label":   notifyLabel,
			"title":          tfMonitoring.Prefix + dashboardTitle,
			"slo_service":    tfMonitoring.SLOService(),
			"metrics":        metrics,
			"slos":           slos,
			"alert_policies": policies,
			"dashboard":      dashboardJSON(tfMonitoring),
		}},
	}
	if err := add(monitoringTF, doc); err != nil {
		return nil, err
	}
	if got, want := slices.Sorted(maps.Keys(files)), slices.Sorted(slices.Values(Outputs[len(Outputs)-len(files):])); !slices.Equal(got, want) {
		return nil, fmt.Errorf("monitoring outputs: rendered %s, declared %s", strings.Join(got, " "), strings.Join(want, " "))
	}
	return files, nil
}
