// Package manifest declares what is deployed: the functions with their triggers and limits, the
// topics, the Firestore field settings and indexes, and the monitoring (log-based metrics, alert
// policies, dashboard). internal/gendeploy renders it for scripts/deploy.sh and terraform/; the local
// stack wires the same triggers. It also names the entry points and the log events the functions
// emit. Not for users.
package manifest
