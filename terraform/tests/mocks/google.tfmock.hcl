# Computed values the google provider checks take these forms in the mocked suites; the rest are
# the mock's.
mock_data "google_project" {
  defaults = { number = "123456789012" }
}

mock_resource "google_service_account" {
  defaults = {
    name  = "projects/counters-test/serviceAccounts/counters@counters-test.iam.gserviceaccount.com"
    email = "counters@counters-test.iam.gserviceaccount.com"
  }
}
