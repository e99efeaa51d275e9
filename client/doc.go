// Package client calls the counters' HTTP functions from Go with the retry table of docs/api.md
// ("Go client") built in, authorized by ID tokens from Application Default Credentials by default.
package client
