# The distributed counters as one Terraform module: the same system scripts/deploy.sh deploys with
# gcloud. The consistency test (internal/deploycheck) parses these files and compares them with the
# code's trigger table (functions.Triggers), go.mod and the environment variables shared/ reads.

locals {
  database_location = var.database_location != "" ? var.database_location : var.region

  # Every entry point the code registers, with its production trigger (functions/triggers.go).
  # Settings (memory, cpu, ...) are in var.function_settings.
  functions = {
    Increment        = { name = "increment", event_type = null, topic = null, document = null, retry = false, public = var.public_increments }
    Count            = { name = "count", event_type = null, topic = null, document = null, retry = false, public = false }
    ConfigureCounter = { name = "configure-counter", event_type = null, topic = null, document = null, retry = false, public = false }
    IncrementFromPubSub = {
      name  = "increment-from-pubsub", event_type = "google.cloud.pubsub.topic.v1.messagePublished"
      topic = "counter-increments", document = null, retry = true, public = false
    }
    RollupOnShardWrite = {
      name  = "rollup-on-shard-write", event_type = "google.cloud.firestore.document.v1.written"
      topic = null, document = "${var.counters_collection}/{counter}/shards/{shard}", retry = true, public = false
    }
    RollupScheduled = {
      name  = "rollup-scheduled", event_type = "google.cloud.pubsub.topic.v1.messagePublished"
      topic = "counter-rollup-tick", document = null, retry = false, public = false
    }
  }

  event_functions = { for entry_point, f in local.functions : entry_point => f if f.event_type != null }
  http_functions  = { for entry_point, f in local.functions : entry_point => f if f.event_type == null }

  # Pub/Sub topics (shared/schema.go): name => what it carries.
  topics = {
    "counter-increments"  = "increments for IncrementFromPubSub"
    "counter-rollup-tick" = "Cloud Scheduler's ticks for RollupScheduled"
    # Increments that failed var.max_delivery_attempts times are parked here (pubsub.tf).
    "counter-increments-dead-letter" = "increments IncrementFromPubSub kept failing on"
  }

  # The optional variables the functions read (shared/config.go, the Env* constants; the consistency
  # test checks this list). var.environment may set these; a new one is one more name here.
  optional_environment = [
    "DEFAULT_NUM_SHARDS", "MAX_DELTA", "SHARD_COUNT_CACHE_TTL", "REQUEST_TIMEOUT", "LOG_LEVEL",
    "ROLLUP_INTERVAL", "ROLLUP_SWEEP_LOOKBACK", "GROUP_COMMIT_INTERVAL", "DEDUPE_TTL",
    "REQUIRE_ID_TOKEN", "REQUIRE_APP_CHECK", "PER_CALLER_LIMIT",
  ]
  environment = merge(var.environment, {
    GOOGLE_CLOUD_PROJECT = var.project
    FIRESTORE_DATABASE   = var.database
    COUNTERS_COLLECTION  = var.counters_collection
    ROLLUPS_COLLECTION   = var.rollups_collection
    DEDUPE_COLLECTION    = var.dedupe_collection
  })
  unknown_environment = setsubtract(keys(var.environment), local.optional_environment)

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
  for_each = local.topics
  project  = var.project
  name     = each.key
  labels   = { system = "distributed-counters" }

  depends_on = [google_project_service.api]
}

# Every minute, at least once: RollupScheduled rolls up the counters that changed. Cloud Scheduler
# publishes with its own service agent.
resource "google_cloud_scheduler_job" "rollup_tick" {
  project   = var.project
  region    = var.region
  name      = "counter-rollup-tick"
  schedule  = "* * * * *"
  time_zone = "Etc/UTC"

  pubsub_target {
    topic_name = google_pubsub_topic.topic["counter-rollup-tick"].id
    data       = base64encode("tick")
  }

  depends_on = [google_project_service.api]
}
