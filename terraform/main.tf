# The distributed counters as one Terraform module: the same system scripts/deploy.sh deploys with
# gcloud. What it deploys (functions, triggers, limits, topics, the scheduler, settings, field
# settings) is declared in Go (internal/manifest/deployment.go, functions/config) and read from
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

  event_functions = { for entry_point, f in local.functions : entry_point => f if f.event_type != null }
  http_functions  = { for entry_point, f in local.functions : entry_point => f if f.event_type == null }

  # The functions' environment: var.environment may set the settings deployment.gen.tf.json lists,
  # but those the module sets itself (the project, the database, the collections).
  environment = merge(var.environment, {
    (local.deployment.env_of_option.project)  = var.project
    (local.deployment.env_of_option.database) = var.database
    COUNTERS_COLLECTION                       = var.counters_collection
    ROLLUPS_COLLECTION                        = var.rollups_collection
    TOPS_COLLECTION                           = var.tops_collection
    DEDUPE_COLLECTION                         = var.dedupe_collection
    COUNTER_SOURCES                           = local.counter_sources
  })
  optional_environment = setsubtract(keys(local.deployment.env_defaults), ["COUNTERS_COLLECTION", "ROLLUPS_COLLECTION", "TOPS_COLLECTION", "DEDUPE_COLLECTION"])
  unknown_environment  = setsubtract(keys(var.environment), local.optional_environment)

  apis = concat([
    "cloudfunctions.googleapis.com", "run.googleapis.com", "cloudbuild.googleapis.com",
    "artifactregistry.googleapis.com", "eventarc.googleapis.com", "pubsub.googleapis.com",
    "cloudscheduler.googleapis.com", "firestore.googleapis.com", "firebaserules.googleapis.com",
    "logging.googleapis.com", "iam.googleapis.com", "storage.googleapis.com", "monitoring.googleapis.com",
  ], local.increment_guards.APP_CHECK_REPLAY_PROTECTION ? ["firebaseappcheck.googleapis.com"] : [])
}

resource "google_project_service" "api" {
  for_each           = var.enable_apis ? toset(local.apis) : toset([])
  project            = var.project
  service            = each.key
  disable_on_destroy = false
}

# Identities: the functions run as "runtime" (Firestore, this database only); Eventarc and Pub/Sub
# push call the event functions as "trigger", which may invoke those (functions.tf) and nothing else;
# Cloud Build builds the functions as "build" (its logs, the uploaded source; its images: artifacts.tf).
locals {
  identities = {
    runtime = { account_id = "counters-runtime", display_name = "Distributed counters: functions at runtime" }
    trigger = { account_id = "counters-trigger", display_name = "Distributed counters: Eventarc and Pub/Sub push deliveries" }
    build   = { account_id = "counters-build", display_name = "Distributed counters: builds of the functions" }
  }
  database_name = "projects/${var.project}/databases/${var.database}"
  # Cloud Functions copies the source object into its source bucket of the region, which it creates
  # on the first deploy, and the build reads it there: the build's storage role holds on that bucket alone.
  sources_bucket = "projects/_/buckets/gcf-v2-sources-${data.google_project.project.number}-${var.region}"
  identity_roles = merge({
    "runtime roles/datastore.user" = {
      identity = "runtime", role = "roles/datastore.user", condition = {
        title      = "counters-database-only"
        expression = "resource.name == \"${local.database_name}\" || resource.name.startsWith(\"${local.database_name}/\")"
      }
    }
    "trigger roles/eventarc.eventReceiver" = { identity = "trigger", role = "roles/eventarc.eventReceiver", condition = null }
    "build roles/logging.logWriter"        = { identity = "build", role = "roles/logging.logWriter", condition = null }
    "build roles/storage.objectAdmin" = {
      identity = "build", role = "roles/storage.objectAdmin", condition = {
        title      = "counters-build-sources-only"
        expression = "resource.name == \"${local.sources_bucket}\" || resource.name.startsWith(\"${local.sources_bucket}/\")"
      }
    }
    # CHECK_REVOKED_TOKENS looks users up (firebaseauth.users.get).
    }, local.increment_guards.CHECK_REVOKED_TOKENS ? {
    "runtime roles/firebaseauth.viewer" = { identity = "runtime", role = "roles/firebaseauth.viewer", condition = null }
    } : {}, local.increment_guards.APP_CHECK_REPLAY_PROTECTION ? {
    # APP_CHECK_REPLAY_PROTECTION consumes App Check tokens (firebaseappcheck.appCheckTokens.verify).
    "runtime roles/firebaseappcheck.tokenVerifier" = { identity = "runtime", role = "roles/firebaseappcheck.tokenVerifier", condition = null }
  } : {})
}

data "google_project" "project" {
  project_id = var.project
}

resource "google_service_account" "identity" {
  for_each     = local.identities
  project      = var.project
  account_id   = "${local.name_prefix}${each.value.account_id}"
  display_name = each.value.display_name
}

resource "google_project_iam_member" "identity_role" {
  for_each = local.identity_roles
  project  = var.project
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
  project  = var.project
  name     = "${local.name_prefix}${each.key}"
  labels   = { system = "distributed-counters" }

  depends_on = [google_project_service.api]
}

# The Cloud Scheduler job publishes "tick" to its topic on its schedule, at least once
# (RollupScheduled rolls up the counters that changed). Cloud Scheduler publishes with its own
# service agent.
locals {
  schedule = one(local.deployment.schedules)
}

resource "google_cloud_scheduler_job" "rollup_tick" {
  project   = var.project
  region    = var.region
  name      = "${local.name_prefix}${local.schedule.topic}"
  schedule  = local.schedule.schedule
  time_zone = "Etc/UTC"

  pubsub_target {
    topic_name = google_pubsub_topic.topic[local.schedule.topic].id
    data       = base64encode("tick")
  }

  depends_on = [google_project_service.api]
}
