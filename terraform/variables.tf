variable "project" {
  description = "Google Cloud project to deploy into."
  type        = string
}

variable "region" {
  description = "Region of the functions, the Eventarc Pub/Sub triggers, the source bucket and the Cloud Scheduler job."
  type        = string
  default     = "us-central1"
}

variable "database" {
  description = "Firestore database ID the functions use."
  type        = string
  default     = "(default)"
}

variable "database_location" {
  description = "Location of the Firestore database (e.g. nam5, eur3 or a region). The Firestore trigger must be there. Empty: the region."
  type        = string
  default     = ""
}

variable "create_database" {
  description = "Create the Firestore database (Native mode) in database_location. Leave false when it exists already."
  type        = bool
  default     = false
}

variable "runtime" {
  description = "Cloud Functions runtime. Must match the go line of go.mod (go 1.26.x is go126); the consistency test checks it."
  type        = string
  default     = "go126"
}

variable "public_increments" {
  description = "Let anyone (allUsers) invoke Increment. Off by default: callers need roles/run.invoker. Read README.md, \"Public increments\", before turning it on."
  type        = bool
  default     = false
}

variable "http_invokers" {
  description = "Members granted roles/run.invoker on the HTTP functions (Increment, Count, ConfigureCounter), e.g. serviceAccount:backend@PROJECT.iam.gserviceaccount.com."
  type        = list(string)
  default     = []
}

variable "increment_concurrency" {
  description = "Concurrent requests one Increment instance serves. Group commit merges the concurrent increments of a counter in one instance into one shard write."
  type        = number
  default     = 80
}

variable "rollup_concurrency" {
  description = "Concurrent events one RollupOnShardWrite instance serves. The roll-up holds an event open for up to one roll-up interval while it throttles."
  type        = number
  default     = 80
}

variable "counters_collection" {
  description = "COUNTERS_COLLECTION: collection of counter documents; shards are its shards subcollection."
  type        = string
  default     = "counters"
}

variable "rollups_collection" {
  description = "ROLLUPS_COLLECTION: collection of the roll-up documents apps read."
  type        = string
  default     = "rollups"
}

variable "dedupe_collection" {
  description = "DEDUPE_COLLECTION: collection of the dedupe records of keyed increments (TTL on expires_at)."
  type        = string
  default     = "counter_dedupe"
}

variable "default_num_shards" {
  description = "DEFAULT_NUM_SHARDS: shard count of a counter created by its first increment (1..1000). Null: the code's default (10)."
  type        = number
  default     = null
}

variable "max_delta" {
  description = "MAX_DELTA: largest magnitude of one increment. Null: the code's default (1000000)."
  type        = number
  default     = null
}

variable "shard_count_cache_ttl" {
  description = "SHARD_COUNT_CACHE_TTL: how long an instance trusts a cached shard count (Go duration). Null: the code's default (30s)."
  type        = string
  default     = null
}

variable "request_timeout" {
  description = "REQUEST_TIMEOUT: bound on one request's database work (Go duration). Null: the code's default (10s)."
  type        = string
  default     = null
}

variable "log_level" {
  description = "LOG_LEVEL: DEBUG, INFO, WARNING or ERROR. Null: the code's default (INFO)."
  type        = string
  default     = null
}

variable "rollup_interval" {
  description = "ROLLUP_INTERVAL: at most one roll-up write per counter per interval (Go duration). Null: the code's default (1s)."
  type        = string
  default     = null
}

variable "rollup_sweep_lookback" {
  description = "ROLLUP_SWEEP_LOOKBACK: how far back the scheduled sweep looks for written shards (Go duration, at least 2m). Null: the code's default (10m)."
  type        = string
  default     = null
}

variable "group_commit_interval" {
  description = "GROUP_COMMIT_INTERVAL: least time between two shard writes of one counter by one instance; concurrent increments share a write (Go duration; 0s writes every increment on its own, as the Firebase guide does). Null: the code's default (125ms)."
  type        = string
  default     = null
}

variable "dedupe_ttl" {
  description = "DEDUPE_TTL: how long a keyed increment's dedupe record is kept (Go duration). Null: the code's default (about 8 days)."
  type        = string
  default     = null
}
