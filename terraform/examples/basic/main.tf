# A root module that deploys the counters with the module in ../.. (docs/operations.md, "With
# Terraform"). Copy it into your stack and set source to where the module is.

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

# The Firebase Rules API needs a quota project when called with user credentials.
provider "google" {
  project               = var.project_id
  region                = var.region
  billing_project       = var.project_id
  user_project_override = true
}

module "counters" {
  source = "../.."

  project_id      = var.project_id
  region          = var.region
  name_prefix     = ""
  page_channels   = []
  ticket_channels = []
}

output "increment_url" {
  description = "URL of the Increment function."
  value       = module.counters.increment_url
}

output "alert_policies" {
  description = "The alert policies, by key."
  value       = module.counters.alert_policies
}
