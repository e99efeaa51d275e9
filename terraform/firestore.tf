resource "google_firestore_database" "database" {
  count       = var.create_database ? 1 : 0
  project     = var.project
  name        = var.database
  location_id = local.database_location
  type        = "FIRESTORE_NATIVE"

  depends_on = [google_project_service.api]
}

# Dedupe records expire: the TTL policy deletes each after its expires_at. No index: expires_at is
# now + DEDUPE_TTL on every keyed increment, an ever-increasing hot range, and TTL needs none.
resource "google_firestore_field" "dedupe_expires_at" {
  project    = var.project
  database   = var.database
  collection = var.dedupe_collection
  field      = "expires_at"

  ttl_config {}
  index_config {}

  depends_on = [google_firestore_database.database]
}

# updated_at is a timestamp written up to once a second per counter: indexed, it is a hot range.
# Apps read roll-ups by ID, so no query needs it.
resource "google_firestore_field" "rollup_updated_at" {
  project    = var.project
  database   = var.database
  collection = var.rollups_collection
  field      = "updated_at"

  index_config {}

  depends_on = [google_firestore_database.database]
}

# Every increment writes a shard's count. The sum aggregation scans the ascending index of count in a
# counter's shards collection: keep that one, drop descending and array-contains.
resource "google_firestore_field" "shard_count" {
  project    = var.project
  database   = var.database
  collection = "shards"
  field      = "count"

  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION"
    }
  }

  depends_on = [google_firestore_database.database]
}

# The scheduled sweep queries the shards collection group on touched_minute.
resource "google_firestore_field" "shard_touched_minute" {
  project    = var.project
  database   = var.database
  collection = "shards"
  field      = "touched_minute"

  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
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
