# The distributed counters as one Terraform module: the same system scripts/deploy.sh deploys with
# gcloud. What it deploys (functions, triggers, limits, topics, the scheduler, settings, field
# settings, accounts, roles, invokers, dead letters, APIs) is declared in Go (internal/manifest, functions/config) and read from
# local.deployment, which `go generate ./...` writes into deployment.gen.tf.json.

locals {
  database_location = var.database_location != "" ? var.database_location : var.region
  # What the deployment names: functions, topics, subscriptions, the scheduler job, service
  # accounts, the source bucket, the SLO service and dashboard with name_prefix; log-based metrics
  # with it in snake case (PromQL names allow no "-").
  name_prefix   = var.name_prefix
  metric_prefix = replace(var.name_prefix, "-", "_")

  # Every deployed function by entry point (an opt-in one only when var.opt_in names it), and those
  # of the counter sources by name (sources.tf): its
  # declaration, var.function_settings' overrides, its Firestore trigger's full document pattern, and
  # whether allUsers may invoke it.
  functions = merge({ for entry_point, f in local.deployment.functions : entry_point => merge(
    f,
    { for name, value in try(var.function_settings[entry_point], {}) : name => value if value != null },
    {
      name     = "${local.name_prefix}${f.name}"
      document = f.document == null || f.document_from_root ? f.document : "${var.counters_collection}/${f.document}"
      public   = f.public_on_request && var.public_increments
    },
  ) if !f.opt_in || contains(var.opt_in, f.name) }, local.source_functions)
  opt_in_names = [for f in local.deployment.functions : f.name if f.opt_in]

  http_functions = { for entry_point, f in local.functions : entry_point => f if f.event_type == null }

  # The functions' environment: var.environment may set the settings deployment.gen.tf.json lists,
  # but those the module sets itself (the project, the database, the collections).
  environment = merge(var.environment, {
    (local.deployment.env_of_option.project)  = var.project_id
    (local.deployment.env_of_option.database) = var.database
    COUNTERS_COLLECTION                       = var.counters_collection
    ROLLUPS_COLLECTION                        = var.rollups_collection
    TOPS_COLLECTION                           = var.tops_collection
    DEDUPE_COLLECTION                         = var.dedupe_collection
    COUNTER_SOURCES                           = local.counter_sources
  })
  optional_environment = setsubtract(keys(local.deployment.env_defaults), ["COUNTERS_COLLECTION", "ROLLUPS_COLLECTION", "TOPS_COLLECTION", "DEDUPE_COLLECTION"])
  unknown_environment  = setsubtract(keys(var.environment), local.optional_environment)

  apis = [for a in local.deployment.apis : a.name if a.setting == null ? true : local.increment_guards[a.setting]]
}

resource "google_project_service" "api" {
  for_each           = var.enable_apis ? toset(local.apis) : toset([])
  project            = var.project_id
  service            = each.key
  disable_on_destroy = false
}

# Identities and their roles: internal/manifest/iam.go (docs/operations.md, "Identities").
locals {
  identity_roles = { for key, r in local.deployment.project_roles : key => {
    identity = r.account
    role     = r.role
    condition = r.condition == null ? null : {
      title = r.condition.title
      expression = replace(replace(replace(replace(r.condition.expression, "{project}", var.project_id),
      "{database}", var.database), "{project_number}", data.google_project.project.number), "{region}", var.region)
    }
  } if r.setting == null ? true : local.increment_guards[r.setting] }
}

data "google_project" "project" {
  project_id = var.project_id
}

resource "google_service_account" "identity" {
  for_each     = local.deployment.service_accounts
  project      = var.project_id
  account_id   = "${local.name_prefix}${each.value.account_id}"
  display_name = each.value.display_name
}

resource "google_project_iam_member" "identity_role" {
  for_each = local.identity_roles
  project  = var.project_id
  role     = each.value.role
  member   = "serviceAccount:${google_service_account.identity[each.value.identity].email}"

  dynamic "condition" {
    for_each = each.value.condition == null ? [] : [each.value.condition]
    content {
      title      = condition.value.title
      expression = condition.value.expression
    }
  }
}

resource "google_pubsub_topic" "topic" {
  for_each = toset(local.deployment.topics)
  project  = var.project_id
  name     = "${local.name_prefix}${each.key}"
  labels   = { system = "distributed-counters" }

  depends_on = [google_project_service.api]
}

# The Cloud Scheduler job publishes its message to its topic on its schedule, at least once
# (RollupScheduled rolls up the counters that changed). Cloud Scheduler publishes with its own
# service agent.
locals {
  schedule = one(local.deployment.schedules)
}

resource "google_cloud_scheduler_job" "rollup_tick" {
  project   = var.project_id
  region    = var.region
  name      = "${local.name_prefix}${local.schedule.topic}"
  schedule  = local.schedule.schedule
  time_zone = local.schedule.time_zone

  pubsub_target {
    topic_name = google_pubsub_topic.topic[local.schedule.topic].id
    data       = base64encode(local.schedule.message)
  }

  depends_on = [google_project_service.api]
}
