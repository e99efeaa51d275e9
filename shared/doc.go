// Package shared is the Firestore schema the packages agree on (collections, fields, paths) and which
// Firestore errors are retryable; shared/wire holds what callers send, shared/clock and
// shared/carrier the engines' time. Not a supported import (see package counters).
package shared
