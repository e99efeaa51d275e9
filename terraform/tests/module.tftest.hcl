# `terraform test` against mocked providers (Terraform 1.7+; docs/operations.md, "With Terraform"):
# nothing reaches Google. Run from terraform/.

mock_provider "google" {
  source = "./tests/mocks"
}

mock_provider "archive" {}

variables {
  project_id = "counters-test"
}

run "a_deployment_with_a_prefix" {
  variables {
    name_prefix                  = "staging-"
    rollups_collection           = "staging_rollups"
    dedupe_collection            = "staging_counter_dedupe"
    manage_shared_field_settings = false
    counter_sources              = "[{\"documents\": \"posts/{post}/likes/{like}\", \"counter\": \"likes-{post}\"}]"
  }

  assert {
    condition     = google_cloudfunctions2_function.function["Increment"].name == "staging-increment"
    error_message = "The functions' names carry the prefix."
  }
  assert {
    condition     = alltrue([for key, p in google_monitoring_alert_policy.counters : p.user_labels["counters_alert"] == "staging-${key}"])
    error_message = "Every alert policy's counters_alert label carries the prefix, so deploy.sh never takes it for its own."
  }
  assert {
    condition     = toset([for f in google_firestore_field.field : f.collection]) == toset(["staging_rollups", "staging_counter_dedupe"])
    error_message = "Without manage_shared_field_settings, only the deployment's own collections get field settings."
  }
  assert {
    condition     = contains(keys(google_cloudfunctions2_function.function), "count-documents-${substr(sha256("posts/{post}/likes/{like}"), 0, 8)}")
    error_message = "A declared pattern gets its count-documents function, with no Go at plan."
  }
  assert {
    condition     = strcontains(data.archive_file.source.output_path, "staging-")
    error_message = "The source archive is the deployment's own."
  }
}

run "the_shared_field_settings_have_one_owner" {
  assert {
    condition     = contains([for f in google_firestore_field.field : f.collection], "shards")
    error_message = "By default the deployment manages the shared field settings (shards, ...)."
  }
  assert {
    condition     = alltrue([for key, p in google_monitoring_alert_policy.counters : p.user_labels["counters_alert"] == key])
    error_message = "Without a prefix, the labels are the keys deploy.sh uses."
  }
}

run "bad_variables_are_refused" {
  command = plan

  variables {
    project_id        = "My Project"
    database_location = "North America"
    runtime           = "go"
    counter_sources   = "{not json"
  }

  expect_failures = [var.project_id, var.database_location, var.runtime, var.counter_sources]
}
