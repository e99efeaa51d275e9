# The collection counters of the counter sources declaration file: one count-documents function per
# declared document pattern (local.source_functions, deployed with the others in functions.tf), so
# that removing a declaration removes its function and trigger. The file is var.environment's
# COUNTER_SOURCES, else COUNTER_SOURCES in Terraform's environment, else counter-sources.json,
# relative to the repository root. cmd/sources checks it as the functions will (sources.Load) while
# Terraform plans: a file that cannot work stops the plan with its message, naming the entry and
# the rule. It also names the functions and gives the declarations, inline, for the functions'
# COUNTER_SOURCES. It runs with `go run`: planning needs Go.
data "external" "counter_sources" {
  program     = ["go", "run", "./cmd/sources", "terraform"]
  working_dir = "${path.module}/.."
  query = {
    COUNTER_SOURCES     = lookup(var.environment, "COUNTER_SOURCES", "")
    COUNTERS_COLLECTION = var.counters_collection
    ROLLUPS_COLLECTION  = var.rollups_collection
    TOPS_COLLECTION     = var.tops_collection
    DEDUPE_COLLECTION   = var.dedupe_collection
  }
}

locals {
  # COUNTER_SOURCES for the deployed functions: the file's place in the upload as they see it.
  counter_sources = data.external.counter_sources.result.counter_sources
  # The functions of the counter sources by name, each its per-source declaration with
  # var.function_settings' overrides (by entry point) and its pattern.
  source_functions = { for name, s in jsondecode(data.external.counter_sources.result.functions) : name => merge(
    local.deployment.source_functions[s.entry_point],
    { for setting, value in try(var.function_settings[s.entry_point], {}) : setting => value if value != null },
    { name = "${local.name_prefix}${name}", document = s.document, public = false },
  ) }
}
