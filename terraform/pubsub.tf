# Dead letters of increment-from-pubsub: a message that failed var.max_delivery_attempts deliveries is
# parked in the topic counter-increments-dead-letter, not retried for 7 days. A topic keeps nothing by
# itself: this pull subscription holds the parked messages for 7 days, to inspect and replay them
# (README.md, "Dead letters").
resource "google_pubsub_subscription" "dead_letter" {
  project                    = var.project
  name                       = "counter-increments-dead-letter"
  topic                      = google_pubsub_topic.topic["counter-increments-dead-letter"].id
  message_retention_duration = "604800s"
  ack_deadline_seconds       = 60
  labels                     = { system = "distributed-counters" }

  expiration_policy {
    ttl = ""
  }
}

# Eventarc makes the push subscription of increment-from-pubsub's trigger, and the provider does not
# expose it, so the dead-letter policy is attached to it with gcloud after every change of the trigger
# (needs gcloud on the machine that applies). scripts/deploy.sh runs the same step, so both paths
# attach it the same way: find the subscription, let Pub/Sub's service agent read it and publish to
# the dead-letter topic, set the policy.
resource "terraform_data" "dead_letter_policy" {
  triggers_replace = [
    google_cloudfunctions2_function.function["IncrementFromPubSub"].event_trigger[0].trigger,
    google_pubsub_subscription.dead_letter.id,
    var.max_delivery_attempts,
  ]

  provisioner "local-exec" {
    command = join(" ", [
      "bash", "${path.module}/../scripts/deploy.sh", "--dead-letter-only",
      "--project", var.project, "--region", var.region, "--max-delivery-attempts", var.max_delivery_attempts,
    ])
  }
}
