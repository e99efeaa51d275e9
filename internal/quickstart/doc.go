// Package quickstart tests the README and docs.
package quickstart
