variable "project_id" {
  description = "Google Cloud project ID to deploy into."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id: a project ID (6 to 30 characters of a-z, 0-9 and -, starting with a letter), not its name or number."
  }
}

variable "source_dir" {
  description = "The repository's root, a checkout of the release to deploy, whose source the functions are zipped from. Null: the folder that terraform/source links to, the module's parent, found through the link from a relative, absolute or git source."
  type        = string
  default     = null

  validation {
    condition     = var.source_dir == null || (fileexists("${coalesce(var.source_dir, ".")}/go.mod") && fileexists("${coalesce(var.source_dir, ".")}/counters.go"))
    error_message = "source_dir: the repository's root (with go.mod and counters.go)."
  }
}

variable "counter_sources" {
  description = "The counter sources' declarations as JSON (docs/collection-counters.md); \"[]\": none. Null: the file environment's COUNTER_SOURCES names in source_dir, else counter-sources.json there. Check them first with go run ./cmd/sources check."
  type        = string
  default     = null

  validation {
    condition     = var.counter_sources == null || can([for d in jsondecode(coalesce(var.counter_sources, "[]")) : regex("^[^{}/][^ ]*$", d.documents)])
    error_message = "counter_sources: a JSON array of declarations, each with its documents pattern (docs/collection-counters.md); go run ./cmd/sources check says what is wrong."
  }
}

variable "manage_shared_field_settings" {
  description = "Manage the field settings of collection groups every deployment in the database shares (shards, counter_members, counter_change_ledger). Keep it true in exactly one deployment per database, so that destroying another never changes them."
  type        = bool
  default     = true
}

variable "region" {
  description = "Region of the functions, the Eventarc Pub/Sub triggers, the source bucket and the Cloud Scheduler job."
  type        = string
  default     = "us-central1"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region: a Cloud Functions region such as us-central1 or europe-west1."
  }
}

variable "name_prefix" {
  description = "Prefix of the names of what the module creates (functions, topics, subscriptions, scheduler job, service accounts, source bucket, log-based metrics, SLO service, dashboard), so that two deployments, e.g. \"staging-\" and \"\", can share a project. Give each its own collections too (counters_collection, ...)."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([a-z][a-z0-9-]{0,12}-)?$", var.name_prefix))
    error_message = "name_prefix: empty, or up to 14 characters of a-z, 0-9 and -, starting with a letter and ending with - (service account IDs allow 30 characters; counters-runtime takes 16)."
  }
}

variable "enable_apis" {
  description = "Enable the Google APIs the deployment uses (never disabled on destroy). Turn off when a platform stack enables them."
  type        = bool
  default     = true
}

variable "database" {
  description = "Firestore database ID the functions use."
  type        = string
  default     = "(default)"

  validation {
    condition     = var.database == "(default)" || can(regex("^[a-z][a-z0-9-]{2,61}[a-z0-9]$", var.database))
    error_message = "database: (default), or a database ID of 4 to 63 characters of a-z, 0-9 and -, starting with a letter."
  }
}

variable "database_location" {
  description = "Location of the Firestore database (e.g. nam5, eur3 or a region). The Firestore trigger must be there. Empty: the region."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([a-z]+[0-9]+|[a-z]+-[a-z]+[0-9]+)?$", var.database_location))
    error_message = "database_location: empty, a multi-region such as nam5 or eur3, or a region such as us-central1."
  }
}

variable "create_database" {
  description = "Create the Firestore database (Native mode) in database_location. Leave false when it exists already."
  type        = bool
  default     = false
}

variable "replace_rules_with" {
  description = "Path of a complete Firestore ruleset that replaces the database's whole ruleset: your app's rules with the counters' block added (make rules APP_RULES=...), or ../firestore.rules for a database of its own. Null (the default): the database's rules are left as they are; output security_rules says what to add."
  type        = string
  default     = null

  validation {
    condition     = var.replace_rules_with == null || try(strcontains(file(var.replace_rules_with), "// BEGIN distributed-counters rules"), false)
    error_message = "replace_rules_with: the file must be readable and hold the counters' block (the line // BEGIN distributed-counters rules); write it with make rules APP_RULES=<your app's rules>, or use ../firestore.rules for a database of its own."
  }
}

variable "runtime" {
  description = "Cloud Functions runtime. Must match the go line of go.mod (go 1.26.x is go126); the consistency test checks it."
  type        = string
  default     = "go126"

  validation {
    condition     = can(regex("^go1[0-9]{2}$", var.runtime))
    error_message = "runtime: a Go runtime of Cloud Functions, such as go126."
  }
}

variable "public_increments" {
  description = "Let anyone (allUsers) invoke Increment. Off by default: callers need roles/run.invoker. Read docs/operations.md, \"Public increments\", before turning it on."
  type        = bool
  default     = false
}

variable "opt_in" {
  description = "Names of opt-in functions to deploy too, e.g. [\"fold-extension-shards\"], which folds the firestore-counter extension's shards (docs/migrate-from-firestore-counter.md)."
  type        = set(string)
  default     = []

  validation {
    condition     = alltrue([for name in var.opt_in : can(regex("^[a-z][a-z-]*[a-z]$", name))])
    error_message = "opt_in: names of opt-in functions, such as fold-extension-shards."
  }
}

variable "http_invokers" {
  description = "Members granted roles/run.invoker on Increment, Count and Top, e.g. serviceAccount:backend@PROJECT.iam.gserviceaccount.com. Public members are refused: public_increments opens Increment."
  type        = list(string)
  default     = []

  validation {
    condition     = length(setintersection(var.http_invokers, ["allUsers", "allAuthenticatedUsers"])) == 0
    error_message = "http_invokers: allUsers and allAuthenticatedUsers are refused; public_increments opens Increment alone (docs/operations.md, \"Public increments\")."
  }
}

variable "admin_invokers" {
  description = "Members granted roles/run.invoker on ConfigureCounter, which creates, resets and deletes counters, e.g. user:ops@example.com. Public members are refused."
  type        = list(string)
  default     = []

  validation {
    condition     = length(setintersection(var.admin_invokers, ["allUsers", "allAuthenticatedUsers"])) == 0
    error_message = "admin_invokers: allUsers and allAuthenticatedUsers are refused."
  }
}

# Per-function deploy settings are declared in Go (internal/manifest/deployment.go) and read from
# deployment.gen.tf.json; this variable overrides some of them, e.g.
# { Increment = { max_instances = 200 } }. The deploy documentation ("Production limits") says why
# each default is what it is.
variable "function_settings" {
  description = "Overrides of the per-function settings, by entry point: memory, cpu, concurrency (requests per instance), timeout_seconds, max_instances. What is not given keeps the declared value (internal/manifest/deployment.go)."
  type = map(object({
    memory          = optional(string)
    cpu             = optional(string)
    concurrency     = optional(number)
    timeout_seconds = optional(number)
    max_instances   = optional(number)
  }))
  default = {}

  validation {
    condition = alltrue([for f in values(var.function_settings) : (
      (f.concurrency == null || try(f.concurrency >= 1 && f.concurrency <= 1000 && floor(f.concurrency) == f.concurrency, false)) &&
      (f.timeout_seconds == null || try(f.timeout_seconds >= 1 && f.timeout_seconds <= 3600 && floor(f.timeout_seconds) == f.timeout_seconds, false)) &&
      (f.max_instances == null || try(f.max_instances >= 1 && floor(f.max_instances) == f.max_instances, false))
    )])
    error_message = "function_settings: concurrency is a whole number from 1 to 1000, timeout_seconds from 1 to 3600, max_instances at least 1."
  }
}

variable "max_delivery_attempts" {
  description = "Deliveries of an increment message before Pub/Sub parks it in counter-increments-dead-letter (5..100)."
  type        = number
  default     = 10

  validation {
    condition     = var.max_delivery_attempts >= 5 && var.max_delivery_attempts <= 100 && floor(var.max_delivery_attempts) == var.max_delivery_attempts
    error_message = "max_delivery_attempts: a whole number from 5 to 100, what Pub/Sub takes."
  }
}

variable "counters_collection" {
  description = "COUNTERS_COLLECTION: collection of counter documents; shards are its shards subcollection."
  type        = string
  default     = "counters"

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,100}$", var.counters_collection)) && !startswith(var.counters_collection, "__")
    error_message = "counters_collection: a collection ID (letters, digits, _ and -), not starting with __."
  }
}

variable "rollups_collection" {
  description = "ROLLUPS_COLLECTION: collection of the roll-up documents apps read."
  type        = string
  default     = "rollups"

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,100}$", var.rollups_collection)) && !startswith(var.rollups_collection, "__")
    error_message = "rollups_collection: a collection ID (letters, digits, _ and -), not starting with __."
  }
}

variable "tops_collection" {
  description = "TOPS_COLLECTION: collection of the top lists apps read ({group}_{window})."
  type        = string
  default     = "tops"

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,100}$", var.tops_collection)) && !startswith(var.tops_collection, "__")
    error_message = "tops_collection: a collection ID (letters, digits, _ and -), not starting with __."
  }
}

variable "dedupe_collection" {
  description = "DEDUPE_COLLECTION: collection of the dedupe records of keyed increments (TTL on expires_at)."
  type        = string
  default     = "counter_dedupe"

  # A TTL policy applies to every collection of that ID in the database, an app's included.
  validation {
    condition     = length(regexall("counter", var.dedupe_collection)) > 0
    error_message = "dedupe_collection gets a TTL policy, so its ID must contain \"counter\": the policy would also delete an app's own documents in collections of that ID."
  }
}

variable "environment" {
  description = "Settings of the functions (docs/settings.md), e.g. { MAX_DELTA = \"100\", ROLLUP_INTERVAL = \"2s\" }; a name not given keeps the code's default. The collection names have variables of their own."
  type        = map(string)
  default     = {}

  # ALLOWED_ORIGINS as the functions check it at start-up (functions/config/origins.go), refused
  # before anything is deployed: origins separated by spaces, each scheme://host[:port] in lower case.
  validation {
    condition = length([
      for origin in split(" ", lookup(var.environment, "ALLOWED_ORIGINS", "")) : origin
      if origin != "" && (
        !can(regex("^[a-z][a-z0-9+.-]*://([a-z0-9_.~-]+|\\[[0-9a-f:.]+\\])(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?$", origin))
        || can(regex("^(http://.*:80|https://.*:443)$", origin))
      )
    ]) == 0
    error_message = "environment.ALLOWED_ORIGINS: separate origins with spaces; write each as scheme://host[:port] in lower case, as browsers send it (e.g. https://app.example.com http://localhost:5173): no path or trailing /, no *, no default port."
  }
}

variable "page_channels" {
  description = "Notification channels (projects/P/notificationChannels/ID) of the alerts that page: outages and fast-burning SLOs. Empty: they open incidents in the console only."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.page_channels : can(regex("^projects/[^/]+/notificationChannels/[^/]+$", c))])
    error_message = "page_channels: each is a channel's name, projects/PROJECT/notificationChannels/ID."
  }
}

variable "ticket_channels" {
  description = "Notification channels of the alerts that open a ticket: dead letters, unfinished sweeps, slow budget burn (as page_channels)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.ticket_channels : can(regex("^projects/[^/]+/notificationChannels/[^/]+$", c))])
    error_message = "ticket_channels: each is a channel's name, projects/PROJECT/notificationChannels/ID."
  }
}

variable "alert_thresholds" {
  description = "Thresholds of the alert policies, by key, overriding the defaults (docs/operations.md, \"Monitoring\", lists the keys, defaults and units; sweep_absent's is whole minutes without a sweep, 2 to 1410), e.g. { rollup_age = 30 }."
  type        = map(number)
  default     = {}

  validation {
    condition     = alltrue([for v in values(var.alert_thresholds) : v >= 0])
    error_message = "alert_thresholds: a threshold is a number of at least 0."
  }
}
