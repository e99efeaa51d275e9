# Dead letters of the function with a dead-letter topic (increment-from-pubsub): Pub/Sub pushes its
# topic's messages to it through a subscription of this module (an Eventarc trigger's subscription
# is Eventarc's, and takes no dead-letter policy from Terraform), so that a message that failed
# var.max_delivery_attempts deliveries is parked in the dead-letter topic, not retried for 7 days.
# A topic keeps nothing by itself: the pull subscription named after it holds the parked messages
# for 7 days, to inspect and replay them (docs/operations.md, "Dead letters").
locals {
  dead_letter = one([for entry_point, f in local.functions : { entry_point = entry_point, topic = f.topic, dead_letter_topic = f.dead_letter_topic } if f.dead_letter_topic != null])
  # Pub/Sub's service agent: it publishes what is dead-lettered and signs the pushes' OIDC tokens.
  pubsub_agent = "serviceAccount:${replace(local.deployment.dead_letters.agent, "{project_number}", data.google_project.project.number)}"
  push_url     = google_cloudfunctions2_function.function[local.dead_letter.entry_point].url
}

# Deliveries as Eventarc makes them: authenticated as the trigger identity, to a path naming the
# topic (the function reads the push envelope), retried with backoff from 10 s to 10 minutes.
resource "google_pubsub_subscription" "push" {
  project              = var.project_id
  name                 = "${local.name_prefix}${local.dead_letter.topic}-push"
  topic                = google_pubsub_topic.topic[local.dead_letter.topic].id
  ack_deadline_seconds = local.functions[local.dead_letter.entry_point].timeout_seconds
  labels               = { system = "distributed-counters" }

  push_config {
    push_endpoint = "${local.push_url}/projects/${var.project_id}/topics/${google_pubsub_topic.topic[local.dead_letter.topic].name}"
    oidc_token {
      service_account_email = google_service_account.identity["trigger"].email
      audience              = local.push_url
    }
  }

  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.topic[local.dead_letter.dead_letter_topic].id
    max_delivery_attempts = var.max_delivery_attempts
  }

  expiration_policy {
    ttl = ""
  }

  depends_on = [google_service_account_iam_member.push_token]
}

resource "google_service_account_iam_member" "push_token" {
  service_account_id = google_service_account.identity["trigger"].name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = local.pubsub_agent
}

resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.topic[local.dead_letter.dead_letter_topic].name
  role    = local.deployment.dead_letters.topic_role
  member  = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "dead_letter_subscriber" {
  project      = var.project_id
  subscription = google_pubsub_subscription.push.name
  role         = local.deployment.dead_letters.subscription_role
  member       = local.pubsub_agent
}

resource "google_pubsub_subscription" "dead_letter" {
  project                    = var.project_id
  name                       = "${local.name_prefix}${local.dead_letter.dead_letter_topic}"
  topic                      = google_pubsub_topic.topic[local.dead_letter.dead_letter_topic].id
  message_retention_duration = local.deployment.dead_letters.retention
  ack_deadline_seconds       = local.deployment.dead_letters.ack_deadline_seconds
  labels                     = { system = "distributed-counters" }

  expiration_policy {
    ttl = ""
  }
}
