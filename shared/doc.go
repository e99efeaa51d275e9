// Package shared is what the other packages agree on: the schema, the increment message, input
// validation, retryable errors. Not a supported import (see package counters).
package shared
