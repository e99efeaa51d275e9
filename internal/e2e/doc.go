// Package e2e tests the local stack end to end.
package e2e
