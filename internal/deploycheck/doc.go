// Package deploycheck checks both deployments offline with the real tools: gcloud parses every
// command (GcloudParses) and API body (APIMessageProblems), each upload builds (GcloudUpload,
// ArchiveFiles, BuildUpload), and the Terraform module fits the providers' schema
// (CheckModuleSchema).
package deploycheck
