// Package manifest declares what is deployed: functions, triggers, limits, topics, Firestore
// field settings, indexes, service accounts, roles, APIs and monitoring. internal/gendeploy renders it for deploy.sh and
// terraform/. Not for users.
package manifest
