# The source: the repository zipped without what the build does not need (as .gcloudignore), stored
# under a name that is its content hash, so that the same commit always yields the same object.
data "archive_file" "source" {
  type        = "zip"
  source_dir  = "${path.module}/.."
  output_path = "${path.module}/.build/source.zip"
  excludes = [
    ".git", ".git/**", ".ci/**", ".localstack/**", "bin/**", "cmd/**", "internal/**", "scripts/**",
    "terraform/**", "publisher/**", "client/**", "**/*_test.go", "**/testdata/**", "**/*.md", "*.md", ".gcloudignore", ".gitignore",
    "*.rules", "Makefile", "web/**", "docs/**",
  ]
}

resource "google_storage_bucket" "source" {
  project                     = var.project
  name                        = "${var.project}-counters-source"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  depends_on = [google_project_service.api]
}

resource "google_storage_bucket_object" "source" {
  bucket = google_storage_bucket.source.name
  name   = "source-${data.archive_file.source.output_md5}.zip"
  source = data.archive_file.source.output_path
}

resource "google_cloudfunctions2_function" "function" {
  for_each    = local.functions
  project     = var.project
  location    = var.region
  name        = each.value.name
  description = "Distributed counters: ${each.key}"
  labels      = local.deployment.labels # counters_version: the release (docs/operations.md)

  build_config {
    runtime         = var.runtime
    entry_point     = each.key
    service_account = google_service_account.identity["build"].id
    source {
      storage_source {
        bucket = google_storage_bucket.source.name
        object = google_storage_bucket_object.source.name
      }
    }
  }

  service_config {
    service_account_email            = google_service_account.identity["runtime"].email
    environment_variables            = local.environment
    available_memory                 = each.value.memory
    available_cpu                    = each.value.cpu
    max_instance_request_concurrency = each.value.concurrency
    timeout_seconds                  = each.value.timeout_seconds
    max_instance_count               = each.value.max_instances
    all_traffic_on_latest_revision   = true
  }

  dynamic "event_trigger" {
    for_each = each.value.event_type == null ? [] : [each.value]
    content {
      event_type            = event_trigger.value.event_type
      trigger_region        = event_trigger.value.document == null ? var.region : local.database_location
      pubsub_topic          = event_trigger.value.topic == null ? null : google_pubsub_topic.topic[event_trigger.value.topic].id
      retry_policy          = event_trigger.value.retry ? "RETRY_POLICY_RETRY" : "RETRY_POLICY_DO_NOT_RETRY"
      service_account_email = google_service_account.identity["trigger"].email

      dynamic "event_filters" {
        for_each = event_trigger.value.document == null ? {} : { database = var.database, document = event_trigger.value.document }
        content {
          attribute = event_filters.key
          value     = event_filters.value
          operator  = event_filters.key == "document" ? "match-path-pattern" : null
        }
      }
    }
  }

  lifecycle {
    precondition {
      condition     = length(local.unknown_environment) == 0
      error_message = "var.environment: unknown ${join(", ", local.unknown_environment)}; known: ${join(", ", local.optional_environment)}."
    }
    precondition {
      condition     = length(setsubtract(var.opt_in, local.opt_in_names)) == 0
      error_message = "var.opt_in: ${join(", ", setsubtract(var.opt_in, local.opt_in_names))} is not an opt-in function; opt-in: ${join(", ", local.opt_in_names)}."
    }
  }

  depends_on = [google_project_iam_member.identity_role, google_project_service.api]
}

# Who may invoke what (2nd gen functions are Cloud Run services): the trigger identity the event
# functions; admin_invokers the admin function (ConfigureCounter); http_invokers the other HTTP
# functions; allUsers Increment only when public_increments is on. The set is authoritative: a member
# dropped from a list loses its binding on the next apply.
locals {
  invokers = merge(
    { for entry_point, f in local.event_functions : "${entry_point} trigger" => {
      entry_point = entry_point, member = "serviceAccount:${google_service_account.identity["trigger"].email}"
    } },
    { for pair in setproduct([for entry_point, f in local.http_functions : entry_point if !f.admin], var.http_invokers) :
      "${pair[0]} ${pair[1]}" => { entry_point = pair[0], member = pair[1] }
    },
    { for pair in setproduct([for entry_point, f in local.http_functions : entry_point if f.admin], var.admin_invokers) :
      "${pair[0]} ${pair[1]}" => { entry_point = pair[0], member = pair[1] }
    },
    { for entry_point, f in local.http_functions : "${entry_point} allUsers" => {
      entry_point = entry_point, member = "allUsers"
    } if f.public },
  )
}

resource "google_cloud_run_service_iam_member" "invoker" {
  for_each = local.invokers
  project  = var.project
  location = var.region
  service  = google_cloudfunctions2_function.function[each.value.entry_point].service_config[0].service
  role     = "roles/run.invoker"
  member   = each.value.member
}

# Public increments with neither verified callers nor a counter ID pattern: `terraform plan` and
# `apply` warn (a check does not stop them) and say what that risks.
check "public_increments_guarded" {
  assert {
    condition = (!var.public_increments
      || contains(["1", "t", "T", "TRUE", "true", "True"], lookup(var.environment, "REQUIRE_ID_TOKEN", "false"))
      || contains(["1", "t", "T", "TRUE", "true", "True"], lookup(var.environment, "REQUIRE_APP_CHECK", "false"))
    || lookup(var.environment, "COUNTER_ID_PATTERN", "") != "")
    error_message = "Increment is public with neither verified callers (REQUIRE_ID_TOKEN, REQUIRE_APP_CHECK) nor COUNTER_ID_PATTERN: anyone may create any number of counters with any name (each stays, costs writes and shows in roll-up lists) and add up to MAX_DELTA (${lookup(var.environment, "MAX_DELTA", local.deployment.env_defaults.MAX_DELTA)}) per request. See docs/operations.md, \"Public increments\"."
  }
}
