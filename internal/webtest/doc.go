// Package webtest runs the app side's tests in web/test inside `make test`, against the local stack
// that `make test` started: the Firebase JS SDK with production's security rules, the guide's client
// code under the opt-in rules variant, and the live example app in headless Chromium. The tests are
// Node's (node --test); this package only starts them, so that one `go test ./...` runs everything
// and a missing tool fails rather than skips.
package webtest
