// Command gendeploy writes the deployment files from the Go declarations of the deployed
// functions, field settings, accounts, roles and APIs (internal/manifest) and of the settings
// (functions/config):
//
//	scripts/deployment.gen.sh        sourced by scripts/deploy.sh
//	terraform/deployment.gen.tf.json locals read by the Terraform module
//	docs/settings.md                 the settings reference
//
// Run it with `go generate ./...`; its test fails when a committed file is stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "the repository's root folder")
	flag.Parse()
	files, err := Render(*root)
	if err == nil {
		for _, name := range Outputs {
			if err = os.WriteFile(filepath.Join(*root, name), files[name], 0o644); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendeploy:", err)
		os.Exit(1)
	}
}
