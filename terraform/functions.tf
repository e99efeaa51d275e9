# The source: an allow-list of var.source_dir, as .gcloudignore: go.mod, go.sum,
# counter-sources.json and the non-test Go files of the root package and the packages it imports,
# zipped under a name that is its content hash, so that the same commit always yields the same
# object. The zip is the deployment's own, under the root module's .terraform/.
locals {
  source_root     = var.source_dir != null ? var.source_dir : "${path.module}/source"
  source_packages = ["callerauth", "counter", "extshards", "functions", "functions/*", "gate", "groupcommit", "rollup", "shared", "shared/carrier", "shared/clock", "shared/wire", "sources", "version"]
  source_files = sort([for f in concat(
    [for f in ["go.mod", "go.sum", "counters.go", "counter-sources.json"] : f if fileexists("${local.source_root}/${f}")],
    flatten([for dir in local.source_packages : tolist(fileset(local.source_root, "${dir}/*.go"))]),
  ) : f if length(regexall("_test\\.go$|(^|/)testdata/", f)) == 0])
}

data "archive_file" "source" {
  type        = "zip"
  output_path = "${path.root}/.terraform/counters/${var.project_id}-${local.name_prefix}source.zip"

  dynamic "source" {
    for_each = local.source_files
    content {
      content  = file("${local.source_root}/${source.value}")
      filename = source.value
    }
  }

  lifecycle {
    precondition {
      condition     = contains(local.source_files, "go.mod") && contains(local.source_files, "counters.go")
      error_message = "No source in ${local.source_root}: set source_dir to a checkout of the repository (the link terraform/source is missing from this copy of the module)."
    }
  }
}

resource "google_storage_bucket" "source" {
  project                     = var.project_id
  name                        = "${var.project_id}-${local.name_prefix}counters-source"
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
  project     = var.project_id
  location    = var.region
  name        = each.value.name
  description = "Distributed counters: ${each.key}"
  labels      = local.deployment.labels # counters_version: the release (docs/operations.md)

  build_config {
    runtime           = var.runtime
    entry_point       = each.value.entry_point
    service_account   = google_service_account.identity["build"].id
    docker_repository = google_artifact_registry_repository.functions.id
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

  # A function with a dead-letter topic is called by the push subscription of pubsub.tf instead.
  dynamic "event_trigger" {
    for_each = each.value.event_type == null || each.value.dead_letter_topic != null ? [] : [each.value]
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

  depends_on = [google_project_iam_member.identity_role, google_artifact_registry_repository_iam_member.build_writer, google_project_service.api]
}

# Who may invoke what, by entry point: each function's invoker (manifest.Invoker), an account or
# an invoker list, plus allUsers when public. Each list is authoritative: one binding per function
# holds the whole list, so apply removes the role from every member not in it (one dropped from a
# variable, an allUsers left by an earlier run or the console), and an empty list leaves nobody.
locals {
  invoker_lists = { admin = var.admin_invokers, http = var.http_invokers }
  invokers = { for entry_point, f in local.functions : entry_point => concat(
    f.invoker.account == null ? local.invoker_lists[f.invoker.list] : ["serviceAccount:${google_service_account.identity[f.invoker.account].email}"],
    f.public ? ["allUsers"] : [],
  ) }
}

resource "google_cloud_run_service_iam_binding" "invoker" {
  for_each = local.invokers
  project  = var.project_id
  location = var.region
  service  = google_cloudfunctions2_function.function[each.key].service_config[0].service
  role     = local.deployment.invoker_role
  members  = each.value
}

# What a public Increment lets callers do that the settings do not bound: calls without an account
# (none required, App Check alone, anonymous sign-in accepted, or email sign-up without a verified
# address), counters created by increment
# under any name, and distinct counters fed members the client makes up. `terraform plan` and `apply`
# warn (a check does not stop them) in the words scripts/deploy.sh uses.
locals {
  # The functions' settings as they read them: var.environment's, an empty one unset, else the default.
  settings = merge(local.deployment.env_defaults, { for name, value in var.environment : name => value if value != "" })
  increment_guards = { for name in ["REQUIRE_ID_TOKEN", "REQUIRE_APP_CHECK", "REFUSE_ANONYMOUS_USERS", "CREATE_ON_INCREMENT", "CHECK_REVOKED_TOKENS", "REQUIRE_VERIFIED_EMAIL", "APP_CHECK_REPLAY_PROTECTION"] :
    name => contains(["1", "t", "T", "TRUE", "true", "True"], local.settings[name])
  }
  public_increment_risks = var.public_increments ? compact([
    !local.increment_guards.REQUIRE_ID_TOKEN && !local.increment_guards.REQUIRE_APP_CHECK ? "Anyone may call it and add up to MAX_DELTA=${local.settings.MAX_DELTA} per request, with no bound per person." : "",
    !local.increment_guards.REQUIRE_ID_TOKEN && local.increment_guards.REQUIRE_APP_CHECK ? "Anyone with your app may call it and add up to MAX_DELTA=${local.settings.MAX_DELTA} per request, with no bound per person (App Check alone attests the app, not who uses it)." : "",
    local.increment_guards.REQUIRE_ID_TOKEN && !local.increment_guards.REFUSE_ANONYMOUS_USERS && !local.increment_guards.REQUIRE_VERIFIED_EMAIL ? "Anyone who signs in anonymously, as often as they like, may call it and add up to MAX_DELTA=${local.settings.MAX_DELTA} per request: each sign-in is a new user to PER_CALLER_LIMIT and to distinct counters (REFUSE_ANONYMOUS_USERS=true refuses them)." : "",
    local.increment_guards.REQUIRE_ID_TOKEN && local.increment_guards.REFUSE_ANONYMOUS_USERS && !local.increment_guards.REQUIRE_VERIFIED_EMAIL ? "Anyone who signs up with an email address, as often as they like (email sign-up makes accounts at will), may call it and add up to MAX_DELTA=${local.settings.MAX_DELTA} per request: each account is a new user to PER_CALLER_LIMIT and to distinct counters (REQUIRE_VERIFIED_EMAIL=true refuses accounts without a verified address)." : "",
    local.increment_guards.CREATE_ON_INCREMENT && local.settings.COUNTER_ID_PATTERN == "" ? "Callers may create any number of counters with any name (CREATE_ON_INCREMENT without COUNTER_ID_PATTERN): each stays, costs writes and shows in roll-up lists." : "",
    !local.increment_guards.REQUIRE_ID_TOKEN ? "A distinct counter, if you configure one, counts whatever member a caller sends: its count can be inflated at will, each made-up member costs documents, and counted:false tells anyone whether a given member (say an email address) was counted (REQUIRE_ID_TOKEN=true makes the member the signed-in user)." : "",
  ]) : []
}

check "public_increments_guarded" {
  assert {
    condition     = length(local.public_increment_risks) == 0
    error_message = "Increment is public. ${join(" ", local.public_increment_risks)} See docs/operations.md, \"Public increments\"."
  }
}
