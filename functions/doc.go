// Package functions holds the Cloud Functions entry points, thin adapters over the counter and
// rollup engines; importing it registers them. Not a supported import (see package counters).
package functions
