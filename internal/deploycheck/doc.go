// Package deploycheck checks the two deployments of the system with the real tools, offline: the
// installed gcloud parses every command scripts/deploy.sh --dry-run prints and every gcloud command
// of the docs (GcloudParses), the monitoring bodies deploy.sh sends are messages of the APIs as
// gcloud's own API classes read them (APIMessageProblems), the files each path uploads build as the buildpack builds them
// (GcloudUpload, ArchiveUpload, BuildUpload), and the Terraform module sets only what the real
// providers' schema allows (CheckModuleSchema). What both deploy is generated from the Go
// declarations (manifest.Deployed, functions/config), so nothing here compares copies.
package deploycheck
