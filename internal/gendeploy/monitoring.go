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
// (each in the REST API's JSON; the last two on one line), and the same as Terraform locals.
const (
	monitoringDir     = "scripts/monitoring"
	monitoringTF      = "terraform/monitoring.gen.tf.json"
	dashboardFile     = monitoringDir + "/dashboard.json"
	dashboardTitle    = "Distributed counters"
	alertLabel        = "counters_alert"
	dashboardColumns  = 48
	dashboardTileSize = 24
)

func init() {
	for _, m := range manifest.LogMetrics() {
		Outputs = append(Outputs, metricFile(m))
	}
	for _, p := range manifest.AlertPolicies() {
		Outputs = append(Outputs, policyFile(p))
	}
	Outputs = append(Outputs, dashboardFile, monitoringTF)
}

func metricFile(m manifest.LogMetric) string {
	return path.Join(monitoringDir, "metrics", m.Name+".json")
}
func policyFile(p manifest.AlertPolicy) string {
	return path.Join(monitoringDir, "policies", p.Key+".json")
}

// seconds is d as the API's Duration ("300s").
func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }

// logMetricJSON is m as the Logging API's LogMetric.
func logMetricJSON(m manifest.LogMetric) map[string]any {
	descriptor := map[string]any{"metricKind": "DELTA", "valueType": "INT64", "unit": "1"}
	out := map[string]any{"name": m.Name, "description": m.Description, "filter": m.Filter(), "metricDescriptor": descriptor}
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

// alertPolicyJSON is p as the Monitoring API's AlertPolicy: its condition a MetricThreshold, or a
// MetricAbsence when p.Absent.
func alertPolicyJSON(p manifest.AlertPolicy) map[string]any {
	aggregation := map[string]any{"alignmentPeriod": seconds(p.Period), "perSeriesAligner": p.Aligner, "crossSeriesReducer": p.Reducer}
	if len(p.GroupBy) > 0 {
		aggregation["groupByFields"] = p.GroupBy
	}
	condition := map[string]any{"displayName": p.DisplayName}
	if p.Absent {
		condition["conditionAbsent"] = map[string]any{
			"filter": p.Filter, "duration": seconds(p.AbsentFor()), "aggregations": []any{aggregation}, "trigger": map[string]any{"count": 1},
		}
	} else {
		condition["conditionThreshold"] = map[string]any{
			"filter": p.Filter, "comparison": "COMPARISON_GT", "thresholdValue": p.Threshold,
			"duration": seconds(p.Duration), "aggregations": []any{aggregation}, "trigger": map[string]any{"count": 1},
		}
	}
	return map[string]any{
		"displayName":   p.DisplayName,
		"documentation": map[string]any{"content": p.Documentation, "mimeType": "text/markdown"},
		"userLabels":    map[string]string{alertLabel: p.Key},
		"combiner":      "OR",
		"enabled":       true,
		"conditions":    []any{condition},
	}
}

// dashboardJSON is the dashboard as the Monitoring API's Dashboard (without its name): the charts
// two per row.
func dashboardJSON() map[string]any {
	var tiles []any
	for i, c := range manifest.DashboardCharts() {
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
	return map[string]any{"displayName": dashboardTitle, "mosaicLayout": map[string]any{"columns": dashboardColumns, "tiles": tiles}}
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

// tfPolicy is an alert policy as terraform/monitoring.tf reads it: Absent makes its condition a
// metric absence of Threshold minutes (Duration unused).
type tfPolicy struct {
	DisplayName   string   `json:"display_name"`
	Documentation string   `json:"documentation"`
	Filter        string   `json:"filter"`
	Aligner       string   `json:"aligner"`
	Reducer       string   `json:"reducer"`
	GroupBy       []string `json:"group_by"`
	Period        string   `json:"period"`
	Duration      string   `json:"duration"`
	Threshold     float64  `json:"threshold"`
	Absent        bool     `json:"absent"`
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
	metrics := map[string]tfMetric{}
	for _, m := range manifest.LogMetrics() {
		for _, e := range m.EntryPoints {
			if _, ok := manifest.DeployedFunction(e); !ok {
				return nil, fmt.Errorf("log metric %s: %q is not a deployed entry point", m.Name, e)
			}
		}
		if err := add(metricFile(m), logMetricJSON(m)); err != nil {
			return nil, err
		}
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
	policies := map[string]tfPolicy{}
	for _, p := range manifest.AlertPolicies() {
		if err := add(policyFile(p), alertPolicyJSON(p)); err != nil {
			return nil, err
		}
		groupBy := p.GroupBy
		if groupBy == nil {
			groupBy = []string{}
		}
		policies[p.Key] = tfPolicy{DisplayName: p.DisplayName, Documentation: p.Documentation, Filter: p.Filter, Aligner: p.Aligner,
			Reducer: p.Reducer, GroupBy: groupBy, Period: seconds(p.Period), Duration: seconds(p.Duration), Threshold: p.Threshold, Absent: p.Absent}
	}
	if err := add(dashboardFile, dashboardJSON()); err != nil {
		return nil, err
	}
	doc := map[string]any{
		"//": generated,
		"locals": map[string]any{"monitoring": map[string]any{
			"//":             "The log-based metrics, alert policies and dashboard terraform/monitoring.tf creates. Change the Go declarations (internal/manifest/monitoring.go), then `go generate ./...`.",
			"alert_label":    alertLabel,
			"metrics":        metrics,
			"alert_policies": policies,
			"dashboard":      dashboardJSON(),
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
