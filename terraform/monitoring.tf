# Monitoring (docs/operations.md, "Monitoring"): the log-based metrics over the functions' log lines,
# the SLOs, the alert policies and the dashboard, as local.monitoring declares them
# (monitoring.gen.tf.json, which `go generate ./...` writes from internal/manifest/monitoring.go, its
# names from local.name_prefix and local.metric_prefix; scripts/deploy.sh creates the same).

resource "google_logging_metric" "counters" {
  for_each = local.monitoring.metrics

  project          = var.project_id
  name             = "${local.metric_prefix}${each.key}"
  description      = each.value.description
  filter           = each.value.filter
  value_extractor  = each.value.value_extractor
  label_extractors = each.value.label_extractors

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = each.value.value_type
    unit        = each.value.unit
    dynamic "labels" {
      for_each = each.value.labels
      content {
        key        = labels.value
        value_type = "STRING"
      }
    }
  }

  dynamic "bucket_options" {
    for_each = each.value.buckets == null ? [] : [each.value.buckets]
    content {
      exponential_buckets {
        num_finite_buckets = bucket_options.value.num_finite_buckets
        growth_factor      = bucket_options.value.growth_factor
        scale              = bucket_options.value.scale
      }
    }
  }

  depends_on = [google_project_service.api]
}

# The SLOs (docs/operations.md, "Service level objectives") belong to one custom service.
resource "google_monitoring_custom_service" "counters" {
  project      = var.project_id
  service_id   = local.monitoring.slo_service
  display_name = local.monitoring.title

  depends_on = [google_project_service.api]
}

resource "google_monitoring_slo" "counters" {
  for_each = local.monitoring.slos

  project             = var.project_id
  service             = google_monitoring_custom_service.counters.service_id
  slo_id              = each.key
  display_name        = each.value.display_name
  goal                = each.value.goal
  rolling_period_days = each.value.rolling_period_days

  request_based_sli {
    good_total_ratio {
      total_service_filter = each.value.total
      bad_service_filter   = each.value.bad
    }
  }

  depends_on = [google_logging_metric.counters]
}

# Each alert policy's threshold: var.alert_thresholds' or the declared default.
locals {
  alert_thresholds = { for key, policy in local.monitoring.alert_policies : key => lookup(var.alert_thresholds, key, policy.threshold) }
}

# Each policy's conditions: thresholds (a burn rate's select_slo_burn_rate filter has no
# aggregation; a ratio's denominator is aggregated alike; a minimum request count has a fixed
# threshold), a metric absence whose threshold is minutes without data, or a log match. It
# notifies the channels of its class.
resource "google_monitoring_alert_policy" "counters" {
  for_each = local.monitoring.alert_policies

  project               = var.project_id
  display_name          = each.value.display_name
  combiner              = each.value.combiner
  severity              = each.value.severity
  enabled               = true
  notification_channels = each.value.notify == "page" ? var.page_channels : var.ticket_channels
  user_labels           = { (local.monitoring.alert_label) = each.value.label, (local.monitoring.notify_label) = each.value.notify }

  documentation {
    content   = each.value.documentation
    mime_type = "text/markdown"
  }

  dynamic "conditions" {
    for_each = each.value.conditions
    content {
      display_name = conditions.value.display_name
      dynamic "condition_threshold" {
        for_each = conditions.value.kind == "threshold" ? [conditions.value] : []
        content {
          filter             = condition_threshold.value.filter
          denominator_filter = condition_threshold.value.denominator
          comparison         = "COMPARISON_GT"
          threshold_value    = condition_threshold.value.threshold == null ? local.alert_thresholds[each.key] : condition_threshold.value.threshold
          duration           = condition_threshold.value.duration
          trigger {
            count = 1
          }
          dynamic "aggregations" {
            for_each = condition_threshold.value.aligner == null ? [] : [condition_threshold.value]
            content {
              alignment_period     = aggregations.value.period
              per_series_aligner   = aggregations.value.aligner
              cross_series_reducer = aggregations.value.reducer
              group_by_fields      = aggregations.value.group_by
            }
          }
          dynamic "denominator_aggregations" {
            for_each = condition_threshold.value.denominator == null ? [] : [condition_threshold.value]
            content {
              alignment_period     = denominator_aggregations.value.period
              per_series_aligner   = denominator_aggregations.value.aligner
              cross_series_reducer = denominator_aggregations.value.reducer
              group_by_fields      = denominator_aggregations.value.group_by
            }
          }
        }
      }
      dynamic "condition_absent" {
        for_each = conditions.value.kind == "absent" ? [conditions.value] : []
        content {
          filter   = condition_absent.value.filter
          duration = "${local.alert_thresholds[each.key] * 60}s"
          trigger {
            count = 1
          }
          aggregations {
            alignment_period     = condition_absent.value.period
            per_series_aligner   = condition_absent.value.aligner
            cross_series_reducer = condition_absent.value.reducer
            group_by_fields      = condition_absent.value.group_by
          }
        }
      }
      dynamic "condition_matched_log" {
        for_each = conditions.value.kind == "log_match" ? [conditions.value] : []
        content {
          filter = condition_matched_log.value.filter
        }
      }
    }
  }

  # A log match notifies at most once per rate_limit.
  dynamic "alert_strategy" {
    for_each = each.value.rate_limit == null ? [] : [each.value.rate_limit]
    content {
      auto_close = "1800s"
      notification_rate_limit {
        period = alert_strategy.value
      }
    }
  }

  lifecycle {
    precondition {
      condition     = alltrue([for k in keys(var.alert_thresholds) : contains(keys(local.monitoring.alert_policies), k)])
      error_message = "alert_thresholds: every key must be an alert policy's key (docs/operations.md, \"Monitoring\")."
    }
    precondition {
      condition = !each.value.absent || (floor(local.alert_thresholds[each.key]) == local.alert_thresholds[each.key] &&
      local.alert_thresholds[each.key] >= 2 && local.alert_thresholds[each.key] <= 1410)
      error_message = "alert_thresholds: ${each.key} counts minutes without data: give a whole number of minutes from 2 to 1410 (23.5 hours), the metric-absence durations Cloud Monitoring takes."
    }
    precondition {
      condition     = each.value.rate_limit == null || !contains(keys(var.alert_thresholds), each.key)
      error_message = "alert_thresholds: ${each.key} fires on every matching log entry and has no threshold."
    }
  }

  # A policy's filter may name a log-based metric or an SLO only once it exists.
  depends_on = [google_logging_metric.counters, google_monitoring_slo.counters, google_project_service.api]
}

resource "google_monitoring_dashboard" "counters" {
  project        = var.project_id
  dashboard_json = jsonencode(local.monitoring.dashboard)

  depends_on = [google_logging_metric.counters, google_project_service.api]
}
