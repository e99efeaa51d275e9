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

# Per-function deploy settings by entry point: the same table as FUNCTION_SETTINGS in
# scripts/deploy.sh (the consistency test compares them). cpu null is the platform's default for the
# memory (0.167 vCPU at 256Mi); Cloud Run wants a whole vCPU for a concurrency above 1. To change one
# value, copy the whole map. README.md, "Production limits", says why each value is what it is.
variable "function_settings" {
  description = "Per entry point: memory, cpu (null: the platform's default for the memory), concurrency (requests per instance), timeout_seconds and max_instances."
  type = map(object({
    memory          = string
    cpu             = string
    concurrency     = number
    timeout_seconds = number
    max_instances   = number
  }))
  default = {
    Increment           = { memory = "256Mi", cpu = "1", concurrency = 80, timeout_seconds = 60, max_instances = 100 }
    Count               = { memory = "256Mi", cpu = null, concurrency = 1, timeout_seconds = 60, max_instances = 10 }
    ConfigureCounter    = { memory = "256Mi", cpu = null, concurrency = 1, timeout_seconds = 60, max_instances = 5 }
    IncrementFromPubSub = { memory = "256Mi", cpu = "1", concurrency = 1000, timeout_seconds = 60, max_instances = 100 }
    RollupOnShardWrite  = { memory = "512Mi", cpu = "1", concurrency = 80, timeout_seconds = 60, max_instances = 20 }
    RollupScheduled     = { memory = "256Mi", cpu = null, concurrency = 1, timeout_seconds = 300, max_instances = 1 }
  }
}

variable "max_delivery_attempts" {
  description = "Deliveries of an increment message before Pub/Sub parks it in counter-increments-dead-letter (5..100)."
  type        = number
  default     = 10
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

variable "environment" {
  description = "Optional environment variables of the functions (README.md, \"Configuration\"), e.g. { MAX_DELTA = \"100\", ROLLUP_INTERVAL = \"2s\" }; a name not given keeps the code's default. The collection names have variables of their own."
  type        = map(string)
  default     = {}
}
