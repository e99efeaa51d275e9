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
// built from source; see terraform/README.md) that terraform/ and its examples use.
const schemaFile = "testdata/provider-schema.json"

var providerSchema = flag.String("provider-schema", "",
	"rewrite "+schemaFile+" from this file, the output of `terraform providers schema -json` in terraform/")

// terraformRoots are the module and its example root modules.
func terraformRoots(t *testing.T) []string {
	t.Helper()
	examples, err := filepath.Glob(filepath.Join(root, "terraform", "examples", "*"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("terraform/examples: no example root module (%v)", err)
	}
	return append([]string{filepath.Join(root, "terraform")}, examples...)
}

func loadSchema(t *testing.T) *deploycheck.ProviderSchemas {
	t.Helper()
	if *providerSchema != "" {
		full, err := os.ReadFile(*providerSchema)
		if err != nil {
			t.Fatal(err)
		}
		subset, err := deploycheck.SchemaSubset(full, terraformRoots(t)...)
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
// and of its examples sets only arguments the real provider has and may be set, every required
// one, and only the nested blocks it defines: what `terraform validate` checks against the
// provider, without the provider.
func TestModuleMatchesProviderSchema(t *testing.T) {
	for _, dir := range terraformRoots(t) {
		problems, err := deploycheck.CheckModuleSchema(dir, loadSchema(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// TestExamplesCallTheModule: terraform/ is a child module (no provider block, so that callers may
// use count, for_each and depends_on, and their provider settings hold), and each example root
// calls it with source = "../.." with arguments that are its variables, every required one, and
// reads only its outputs.
func TestExamplesCallTheModule(t *testing.T) {
	module, err := os.ReadDir(filepath.Join(root, "terraform"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range module {
		if data, _ := os.ReadFile(filepath.Join(root, "terraform", f.Name())); strings.HasSuffix(f.Name(), ".tf") && strings.Contains(string(data), "\nprovider \"") {
			t.Errorf("terraform/%s declares a provider: a child module takes its caller's", f.Name())
		}
	}
	for _, dir := range terraformRoots(t)[1:] {
		main, err := os.ReadFile(filepath.Join(dir, "main.tf"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(main), `source = "../.."`) {
			t.Errorf("%s/main.tf: no module with source = \"../..\"", dir)
		}
		problems, err := deploycheck.CheckModuleCalls(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", dir, p)
		}
	}
}

// TestModuleCallCheckFindsWhatValidateFinds: the check reports an unknown argument, a required
// variable left out, an output the module lacks and a provider block in the called module.
func TestModuleCallCheckFindsWhatValidateFinds(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"child/main.tf": `variable "project" {}
variable "region" {
  default = "r"
}
output "url" {
  value = "u"
}
provider "google" {}
`,
		"root/main.tf": `module "m" {
  source  = "../child"
  regoin  = "r"
}
output "x" {
  value = module.m.urls
}
`,
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := deploycheck.CheckModuleCalls(filepath.Join(dir, "root"))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{`unsupported argument "regoin"`, `required variable "project"`, `module.m.urls: no such output`, `declares provider "google"`} {
		if !strings.Contains(all, want) {
			t.Errorf("the check does not report %s; it reports:\n%s", want, all)
		}
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
