resource "google_firestore_database" "database" {
  count       = var.create_database ? 1 : 0
  project     = var.project_id
  name        = var.database
  location_id = local.database_location
  type        = "FIRESTORE_NATIVE"

  depends_on = [google_project_service.api]
}

# Field settings (TTL policies, single-field indexes) declared in Go (functions.FieldSettings, which
# says why); a collection named by a setting is that setting's value. Those on collection groups of
# fixed names (shards, counter_members, ...) belong to the database, not a deployment: only the one
# deployment with var.manage_shared_field_settings manages them.
locals {
  field_settings = { for key, f in local.deployment.field_settings : key => {
    collection = lookup(local.environment, f.collection, f.collection)
    field      = f.field
    ttl        = f.ttl
    indexes    = f.ascending ? [{ order = "ASCENDING", query_scope = "COLLECTION" }] : []
  } if var.manage_shared_field_settings || contains(keys(local.environment), f.collection) }
}

resource "google_firestore_field" "field" {
  for_each   = local.field_settings
  project    = var.project_id
  database   = var.database
  collection = each.value.collection
  field      = each.value.field

  dynamic "ttl_config" {
    for_each = each.value.ttl ? [true] : []
    content {}
  }

  # An empty index_config exempts the field from every index.
  index_config {
    dynamic "indexes" {
      for_each = each.value.indexes
      content {
        order       = indexes.value.order
        query_scope = indexes.value.query_scope
      }
    }
  }

  depends_on = [google_firestore_database.database]
}

# Composite indexes declared in Go (manifest.CompositeIndexes: the top lists' queries); a collection
# named by a setting is that setting's value. Firestore builds them in the background.
resource "google_firestore_index" "composite" {
  for_each   = local.deployment.composite_indexes
  project    = var.project_id
  database   = var.database
  collection = lookup(local.environment, each.value.collection, each.value.collection)
  skip_wait  = true

  dynamic "fields" {
    for_each = each.value.fields
    content {
      field_path = fields.value.fieldPath
      order      = fields.value.order
    }
  }

  depends_on = [google_firestore_database.database]
}

# Security rules. A database has one ruleset, the app's as much as ours, so the module replaces it
# only when replace_rules_with names a complete ruleset (the app's with the counters' block: make
# rules; a database of its own: ../firestore.rules). Otherwise it leaves the rules as they are, and
# output security_rules says what to add. docs/operations.md, "Security rules".
resource "google_firebaserules_ruleset" "firestore" {
  count   = var.replace_rules_with == null ? 0 : 1
  project = var.project_id

  source {
    files {
      name    = "firestore.rules"
      content = file(var.replace_rules_with)
    }
  }

  lifecycle {
    create_before_destroy = true
  }

  depends_on = [google_project_service.api]
}

resource "google_firebaserules_release" "firestore" {
  count        = var.replace_rules_with == null ? 0 : 1
  project      = var.project_id
  name         = var.database == "(default)" ? "cloud.firestore" : "cloud.firestore/${var.database}"
  ruleset_name = "projects/${var.project_id}/rulesets/${google_firebaserules_ruleset.firestore[count.index].name}"

  lifecycle {
    replace_triggered_by = [google_firebaserules_ruleset.firestore[count.index]]
  }
}
