# The collection counters of var.counter_sources (the declarations, as JSON), else of the file
# var.environment's COUNTER_SOURCES names (from local.source_root), else counter-sources.json: one
# count-documents function per declared document pattern (local.source_functions, deployed with the
# others in functions.tf), named NAME-<8 hex of the pattern's SHA-256> as cmd/sources names it, so
# that removing a declaration removes its function and trigger. Nothing runs at plan: check the
# declarations first with `go run ./cmd/sources check` (docs/operations.md, "With Terraform"); the
# functions check them again at start-up.
locals {
  counter_sources_path = lookup(var.environment, "COUNTER_SOURCES", "counter-sources.json")
  counter_sources_file = startswith(local.counter_sources_path, "/") ? local.counter_sources_path : "${local.source_root}/${local.counter_sources_path}"
  declarations = jsondecode(var.counter_sources != null ? var.counter_sources : (
    fileexists(local.counter_sources_file) ? file(local.counter_sources_file) : "[]"
  ))
  # COUNTER_SOURCES for the deployed functions: the declarations inline.
  counter_sources = jsonencode(local.declarations)
  # The functions of the counter sources by name, each its per-source declaration with
  # var.function_settings' overrides (by entry point) and its pattern.
  source_functions = merge([for entry_point, f in local.deployment.source_functions : {
    for pattern in distinct([for d in local.declarations : d.documents]) : "${f.name}-${substr(sha256(pattern), 0, 8)}" => merge(
      f,
      { for setting, value in try(var.function_settings[entry_point], {}) : setting => value if value != null },
      { name = "${local.name_prefix}${f.name}-${substr(sha256(pattern), 0, 8)}", document = pattern, public = false },
    )
  }]...)
}
