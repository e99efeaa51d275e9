// Package quickstart holds the tests of the documentation: the README's quick start, run as written
// against the local stack with every answer it shows checked, and the README's length and the
// relative links of the README and docs/ (those run under -short, without emulators).
package quickstart
