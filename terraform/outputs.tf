output "function_urls" {
  description = "URL of every HTTP function, by entry point. Callers need roles/run.invoker unless public_increments is on (Increment only)."
  value       = { for entry_point, f in local.http_functions : entry_point => google_cloudfunctions2_function.function[entry_point].url }
}

output "increment_url" {
  description = "URL of the Increment function."
  value       = google_cloudfunctions2_function.function["Increment"].url
}

output "runtime_service_account" {
  description = "Service account the functions run as (roles/datastore.user)."
  value       = google_service_account.identity["runtime"].email
}

output "trigger_service_account" {
  description = "Service account Eventarc and Pub/Sub push use to invoke the event functions."
  value       = google_service_account.identity["trigger"].email
}

output "topics" {
  description = "Pub/Sub topics: publish increments to counter-increments."
  value       = { for name, t in google_pubsub_topic.topic : name => t.id }
}

output "source_object" {
  description = "The deployed source archive (gs://bucket/object); redeploy an older commit to roll back."
  value       = "gs://${google_storage_bucket.source.name}/${google_storage_bucket_object.source.name}"
}

output "security_rules" {
  description = "What the module did with the database's security rules, and what to do next."
  value = var.replace_rules_with == null ? join(" ", [
    "Left the database's security rules as they are: clients cannot read the roll-ups until they hold the counters' block.",
    "Add it to your app's rules with make rules APP_RULES=<your rules file> OUT=<combined file> (docs/api.md, \"Security rules\"),",
    "then deploy that file as you deploy your rules, or set replace_rules_with = \"<combined file>\".",
    "A database of its own: replace_rules_with = \"../firestore.rules\".",
  ]) : "Replaced the database's whole ruleset with ${var.replace_rules_with}."
}

output "slos" {
  description = "The SLOs, by ID: their resource names (select_slo_burn_rate takes them)."
  value       = { for id, slo in google_monitoring_slo.counters : id => slo.name }
}

output "alert_policies" {
  description = "The alert policies, by key (docs/operations.md, \"Monitoring\"): their resource names."
  value       = { for key, p in google_monitoring_alert_policy.counters : key => p.name }
}

output "dashboard" {
  description = "The dashboard's resource name."
  value       = google_monitoring_dashboard.counters.id
}
