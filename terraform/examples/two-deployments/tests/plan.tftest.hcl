# `terraform test` against mocked providers (docs/operations.md, "With Terraform"): both
# deployments apply side by side, staging after production, without touching Google. Run from
# terraform/examples/two-deployments after `terraform get`.

mock_provider "google" {
  source = "../../tests/mocks"
}

mock_provider "archive" {}

variables {
  project_id = "counters-test"
}

run "two_deployments_side_by_side" {
  assert {
    condition     = keys(module.production.alert_policies) == keys(module.staging.alert_policies)
    error_message = "Both deployments have every alert policy."
  }
  assert {
    condition = (startswith(module.production.source_object, "gs://counters-test-counters-source/") &&
    startswith(module.staging.source_object, "gs://counters-test-staging-counters-source/"))
    error_message = "Each deployment deploys from its own bucket, named with its prefix."
  }
}
