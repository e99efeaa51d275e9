// Package client calls the counters' HTTP functions from Go with the retry table of docs/api.md
// ("Go client") built in. It is a module of its own, configured by google.golang.org/api/option
// as google-cloud-go's clients are; calls to https:// endpoints carry ID tokens from the options'
// credentials or Application Default Credentials.
package client
