// Package rollup keeps the roll-up document rollups/{id}: the one cheap, slightly stale document apps
// read (and listen to) instead of summing shards.
//
// It never imports net/http or CloudEvents: the functions package adapts it to triggers.
package rollup
