# Two deployments of the counters in one project and database (docs/operations.md, "With
# Terraform"): production without a prefix and staging with "staging-", each with its own
# collections. Production manages the field settings the database's deployments share; staging
# waits for it (depends_on) and leaves them alone, so destroying staging never changes production's.

terraform {
  required_version = ">= 1.5"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0, < 8.0"
    }
  }
}

variable "project_id" {
  description = "Google Cloud project ID to deploy into."
  type        = string
}

variable "region" {
  description = "Region of the functions."
  type        = string
  default     = "us-central1"
}

provider "google" {
  project               = var.project_id
  region                = var.region
  billing_project       = var.project_id
  user_project_override = true
}

locals {
  # The repository's root: the release both deploy, and their declarations.
  source_dir = abspath("${path.module}/../../..")
}

module "production" {
  source = "../.."

  project_id      = var.project_id
  region          = var.region
  source_dir      = local.source_dir
  counter_sources = file("${local.source_dir}/counter-sources.json")
}

module "staging" {
  source = "../.."

  project_id                   = var.project_id
  region                       = var.region
  name_prefix                  = "staging-"
  source_dir                   = local.source_dir
  counters_collection          = "staging_counters"
  rollups_collection           = "staging_rollups"
  tops_collection              = "staging_tops"
  dedupe_collection            = "staging_counter_dedupe"
  manage_shared_field_settings = false
  enable_apis                  = false

  depends_on = [module.production]
}

output "increment_urls" {
  description = "URL of each deployment's Increment function."
  value       = { production = module.production.increment_url, staging = module.staging.increment_url }
}
