package deploycheck_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardcount/counters/internal/deploycheck"
)

// schemaFile is the part of the real providers' schema (hashicorp/google and hashicorp/archive,
// built from source; see terraform/README.md) that terraform/ uses.
const schemaFile = "testdata/provider-schema.json"

var providerSchema = flag.String("provider-schema", "",
	"rewrite "+schemaFile+" from this file, the output of `terraform providers schema -json` in terraform/")

func loadSchema(t *testing.T) *deploycheck.ProviderSchemas {
	t.Helper()
	dir := filepath.Join(root, "terraform")
	if *providerSchema != "" {
		full, err := os.ReadFile(*providerSchema)
		if err != nil {
			t.Fatal(err)
		}
		subset, err := deploycheck.SchemaSubset(full, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(schemaFile, subset, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var schemas deploycheck.ProviderSchemas
	if err := json.Unmarshal(data, &schemas); err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	return &schemas
}

// TestModuleMatchesProviderSchema: every resource, data source and provider block of terraform/
// sets only arguments the real provider has and may be set, every required one, and only the nested
// blocks it defines: what `terraform validate` checks against the provider, without the provider.
func TestModuleMatchesProviderSchema(t *testing.T) {
	problems, err := deploycheck.CheckModuleSchema(filepath.Join(root, "terraform"), loadSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestSchemaCheckFindsWhatValidateFinds: the check refuses a module with the mistakes `terraform
// validate` reports, against the same schema data (a metric-absence condition's among them).
func TestSchemaCheckFindsWhatValidateFinds(t *testing.T) {
	dir := t.TempDir()
	module := `
resource "google_cloudfunctions2_function" "f" {
  location = "r"
  name     = "f"
  url      = "https://example.com"
  build_config {
    runtime = "go126"
    entry_point_typo = "Increment"
  }
  service_config {
    dynamic "no_such_block" {
      for_each = []
      content {}
    }
  }
}

resource "google_pubsub_subscription" "s" {
  topic = "t"
}

resource "google_monitoring_alert_policy" "a" {
  display_name = "a"
  combiner     = "OR"
  conditions {
    display_name = "absent"
    condition_absent {
      filter          = "f"
      duration        = "900s"
      threshold_value = 1
    }
  }
  conditions {
    display_name = "misspelt"
    condition_absence {
      filter = "f"
    }
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(module), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, err := deploycheck.CheckModuleSchema(dir, loadSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{
		`"url" is computed`,
		`unsupported argument "entry_point_typo"`,
		`blocks of type "no_such_block"`,
		`google_pubsub_subscription.s: the required argument "name" is missing`,
		`conditions.condition_absent: unsupported argument "threshold_value"`,
		`blocks of type "condition_absence"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the check does not report %s; it reports:\n%s", want, all)
		}
	}
}
