resource "google_firestore_database" "database" {
  count       = var.create_database ? 1 : 0
  project     = var.project
  name        = var.database
  location_id = local.database_location
  type        = "FIRESTORE_NATIVE"

  depends_on = [google_project_service.api]
}

# Field settings (see README.md, "Index settings"). expires_at on dedupe records and updated_at on
# roll-ups are ever-increasing values written at the increment rate: indexed, each is a hot index
# range, and nothing queries them (TTL needs no index; apps read roll-ups by ID). Every increment
# writes a shard's count and the sum aggregation scans its ascending collection index: keep that one
# only, and the same for writes, which the roll-up sums in the same aggregation to measure the write
# rate.
locals {
  field_settings = {
    dedupe_expires_at = {
      collection = var.dedupe_collection, field = "expires_at", ttl = true, indexes = []
    }
    rollup_updated_at = {
      collection = var.rollups_collection, field = "updated_at", ttl = false, indexes = []
    }
    shard_count = {
      collection = "shards", field = "count", ttl = false
      indexes    = [{ order = "ASCENDING", query_scope = "COLLECTION" }]
    }
    shard_writes = {
      collection = "shards", field = "writes", ttl = false
      indexes    = [{ order = "ASCENDING", query_scope = "COLLECTION" }]
    }
  }
}

resource "google_firestore_field" "field" {
  for_each   = local.field_settings
  project    = var.project
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

# Security rules (firestore.rules): apps read roll-ups; nothing else is open to clients.
resource "google_firebaserules_ruleset" "firestore" {
  project = var.project

  source {
    files {
      name    = "firestore.rules"
      content = file("${path.module}/../firestore.rules")
    }
  }

  lifecycle {
    create_before_destroy = true
  }

  depends_on = [google_project_service.api]
}

resource "google_firebaserules_release" "firestore" {
  project      = var.project
  name         = var.database == "(default)" ? "cloud.firestore" : "cloud.firestore/${var.database}"
  ruleset_name = "projects/${var.project}/rulesets/${google_firebaserules_ruleset.firestore.name}"

  lifecycle {
    replace_triggered_by = [google_firebaserules_ruleset.firestore]
  }
}
