# Monitoring (docs/operations.md, "Monitoring"): the log-based metrics over the functions' log lines,
# the alert policies and the dashboard, as local.monitoring declares them (monitoring.gen.tf.json,
# which `go generate ./...` writes from functions/monitoring.go; scripts/deploy.sh creates the same).

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

  conditions {
    display_name = each.value.display_name
    condition_threshold {
      filter          = each.value.filter
      comparison      = "COMPARISON_GT"
      threshold_value = lookup(var.alert_thresholds, each.key, each.value.threshold)
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

  lifecycle {
    precondition {
      condition     = alltrue([for k in keys(var.alert_thresholds) : contains(keys(local.monitoring.alert_policies), k)])
      error_message = "alert_thresholds: every key must be an alert policy's key (docs/operations.md, \"Monitoring\")."
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
