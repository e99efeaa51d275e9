// Package quickstart tests the README's quick start and the docs' links.
package quickstart
