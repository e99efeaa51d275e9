# Dead letters of the function with a dead-letter topic (increment-from-pubsub): a message that
# failed var.max_delivery_attempts deliveries is parked in that topic, not retried for 7 days. A
# topic keeps nothing by itself: this pull subscription, named after it, holds the parked messages
# for 7 days, to inspect and replay them (docs/operations.md, "Dead letters").
locals {
  dead_letter = one([for entry_point, f in local.functions : { entry_point = entry_point, topic = f.dead_letter_topic } if f.dead_letter_topic != null])
}

resource "google_pubsub_subscription" "dead_letter" {
  project                    = var.project
  name                       = local.dead_letter.topic
  topic                      = google_pubsub_topic.topic[local.dead_letter.topic].id
  message_retention_duration = "604800s"
  ack_deadline_seconds       = 60
  labels                     = { system = "distributed-counters" }

  expiration_policy {
    ttl = ""
  }
}

# Eventarc makes the push subscription of the function's trigger, and the provider does not
# expose it, so the dead-letter policy is attached to it with gcloud after every change of the trigger
# (needs gcloud on the machine that applies). scripts/deploy.sh runs the same step, so both paths
# attach it the same way: find the subscription, let Pub/Sub's service agent read it and publish to
# the dead-letter topic, set the policy.
resource "terraform_data" "dead_letter_policy" {
  triggers_replace = [
    google_cloudfunctions2_function.function[local.dead_letter.entry_point].event_trigger[0].trigger,
    google_pubsub_subscription.dead_letter.id,
    var.max_delivery_attempts,
  ]

  # The values reach the shell as environment variables, quoted where the command uses them: none
  # is ever parsed as shell code.
  provisioner "local-exec" {
    command = "bash \"$DEPLOY_SH\" --dead-letter-only --project \"$PROJECT\" --region \"$REGION\" --max-delivery-attempts \"$MAX_DELIVERY_ATTEMPTS\""
    environment = {
      DEPLOY_SH             = "${path.module}/../scripts/deploy.sh"
      PROJECT               = var.project
      REGION                = var.region
      MAX_DELIVERY_ATTEMPTS = var.max_delivery_attempts
    }
  }
}
