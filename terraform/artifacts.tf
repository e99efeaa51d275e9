# The functions' images go to a Docker repository of their own: the build account may write there
# and to no other repository of the project.
resource "google_artifact_registry_repository" "functions" {
  project       = var.project_id
  location      = var.region
  repository_id = "${local.name_prefix}${local.deployment.repository.id}"
  format        = "DOCKER"
  description   = local.deployment.repository.description

  depends_on = [google_project_service.api]
}

resource "google_artifact_registry_repository_iam_member" "build_writer" {
  project    = google_artifact_registry_repository.functions.project
  location   = google_artifact_registry_repository.functions.location
  repository = google_artifact_registry_repository.functions.name
  role       = local.deployment.repository_role.role
  member     = "serviceAccount:${google_service_account.identity[local.deployment.repository_role.account].email}"
}
