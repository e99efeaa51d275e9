# The distributed counters as one Terraform module: the same system scripts/deploy.sh deploys with
# gcloud. What it deploys (functions, triggers, limits, topics, the scheduler, settings, field
# settings) is declared in Go (functions/deployment.go, functions/config) and read from
# local.deployment, which `go generate ./...` writes into deployment.gen.tf.json.

locals {
  database_location = var.database_location != "" ? var.database_location : var.region

  # Every deployed function by entry point: its declaration, var.function_settings' overrides, its
  # Firestore trigger's full document pattern, and whether allUsers may invoke it.
  functions = { for entry_point, f in local.deployment.functions : entry_point => merge(
    f,
    { for name, value in try(var.function_settings[entry_point], {}) : name => value if value != null },
    {
      document = f.document == null ? null : "${var.counters_collection}/${f.document}"
      public   = f.public_on_request && var.public_increments
    },
  ) }

  event_functions = { for entry_point, f in local.functions : entry_point => f if f.event_type != null }
  http_functions  = { for entry_point, f in local.functions : entry_point => f if f.event_type == null }

  # The functions' environment: var.environment may set the settings deployment.gen.tf.json lists,
  # but those the module sets itself (the project, the database, the collections).
  environment = merge(var.environment, {
    (local.deployment.env_of_option.project)  = var.project
    (local.deployment.env_of_option.database) = var.database
    COUNTERS_COLLECTION                       = var.counters_collection
    ROLLUPS_COLLECTION                        = var.rollups_collection
    DEDUPE_COLLECTION                         = var.dedupe_collection
  })
  optional_environment = setsubtract(keys(local.deployment.env_defaults), ["COUNTERS_COLLECTION", "ROLLUPS_COLLECTION", "DEDUPE_COLLECTION"])
  unknown_environment  = setsubtract(keys(var.environment), local.optional_environment)

  apis = [
    "cloudfunctions.googleapis.com", "run.googleapis.com", "cloudbuild.googleapis.com",
    "artifactregistry.googleapis.com", "eventarc.googleapis.com", "pubsub.googleapis.com",
    "cloudscheduler.googleapis.com", "firestore.googleapis.com", "firebaserules.googleapis.com",
    "logging.googleapis.com", "iam.googleapis.com", "storage.googleapis.com",
  ]
}

resource "google_project_service" "api" {
  for_each           = toset(local.apis)
  project            = var.project
  service            = each.key
  disable_on_destroy = false
}

# Identities: the functions run as "runtime" (Firestore only); Eventarc and Pub/Sub push call the event
# functions as "trigger", which may invoke those (functions.tf) and nothing else.
locals {
  identities = {
    runtime = { account_id = "counters-runtime", role = "roles/datastore.user", display_name = "Distributed counters: functions at runtime" }
    trigger = { account_id = "counters-trigger", role = "roles/eventarc.eventReceiver", display_name = "Distributed counters: Eventarc and Pub/Sub push deliveries" }
  }
}

resource "google_service_account" "identity" {
  for_each     = local.identities
  project      = var.project
  account_id   = each.value.account_id
  display_name = each.value.display_name
}

resource "google_project_iam_member" "identity_role" {
  for_each = local.identities
  project  = var.project
  role     = each.value.role
  member   = "serviceAccount:${google_service_account.identity[each.key].email}"
}

resource "google_pubsub_topic" "topic" {
  for_each = toset(local.deployment.topics)
  project  = var.project
  name     = each.key
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
  name      = local.schedule.topic
  schedule  = local.schedule.schedule
  time_zone = "Etc/UTC"

  pubsub_target {
    topic_name = google_pubsub_topic.topic[local.schedule.topic].id
    data       = base64encode("tick")
  }

  depends_on = [google_project_service.api]
}
