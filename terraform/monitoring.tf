# Monitoring (docs/operations.md, "Monitoring"): the log-based metrics over the functions' log lines,
# the alert policies and the dashboard, as local.monitoring declares them (monitoring.gen.tf.json,
# which `go generate ./...` writes from internal/manifest/monitoring.go; scripts/deploy.sh creates the same).

resource "google_project_service" "monitoring" {
  project            = var.project
  service            = "monitoring.googleapis.com"
  disable_on_destroy = false
}

resource "google_logging_metric" "counters" {
  for_each = local.monitoring.metrics

  project          = var.project
  name             = each.key
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

# Each alert policy's threshold: var.alert_thresholds' or the declared default.
locals {
  alert_thresholds = { for key, policy in local.monitoring.alert_policies : key => lookup(var.alert_thresholds, key, policy.threshold) }
}

resource "google_monitoring_alert_policy" "counters" {
  for_each = local.monitoring.alert_policies

  project               = var.project
  display_name          = each.value.display_name
  combiner              = "OR"
  enabled               = true
  notification_channels = var.notification_channels
  user_labels           = { (local.monitoring.alert_label) = each.key }

  documentation {
    content   = each.value.documentation
    mime_type = "text/markdown"
  }

  # One condition: a threshold, or (absent) a metric absence whose threshold is minutes without data.
  conditions {
    display_name = each.value.display_name
    dynamic "condition_threshold" {
      for_each = each.value.absent ? [] : [each.value]
      content {
        filter          = each.value.filter
        comparison      = "COMPARISON_GT"
        threshold_value = local.alert_thresholds[each.key]
        duration        = each.value.duration
        trigger {
          count = 1
        }
        aggregations {
          alignment_period     = each.value.period
          per_series_aligner   = each.value.aligner
          cross_series_reducer = each.value.reducer
          group_by_fields      = each.value.group_by
        }
      }
    }
    dynamic "condition_absent" {
      for_each = each.value.absent ? [each.value] : []
      content {
        filter   = each.value.filter
        duration = "${local.alert_thresholds[each.key] * 60}s"
        trigger {
          count = 1
        }
        aggregations {
          alignment_period     = each.value.period
          per_series_aligner   = each.value.aligner
          cross_series_reducer = each.value.reducer
          group_by_fields      = each.value.group_by
        }
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
  }

  # A policy's filter may name a log-based metric only once the metric exists.
  depends_on = [google_logging_metric.counters, google_project_service.monitoring]
}

resource "google_monitoring_dashboard" "counters" {
  project        = var.project
  dashboard_json = jsonencode(local.monitoring.dashboard)

  depends_on = [google_logging_metric.counters, google_project_service.monitoring]
}
