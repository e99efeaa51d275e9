// Package rollup keeps rollups/{id}: the cheap, slightly stale document apps read instead of summing
// shards (docs/design.md, "The roll-up engine").
//
// Files and the guarantees they keep:
//
//   - engine.go: Refresh writes a counter's exact sums at one read time, at most once per
//     ROLLUP_INTERVAL across instances; an older computation never overwrites a newer one.
//   - carry.go: Notify answers an event at once; one event per instance carries every refresh.
//   - backend.go: a refresh's Firestore reads and writes, and the mirror field.
//   - sweep.go: the scheduled sweep rolls up every counter touched within ROLLUP_SWEEP_LOOKBACK
//     whose roll-up is behind.
//   - tops.go, sweeptops.go: a group's top lists, refreshed with its roll-ups and after a delete;
//     an instance refreshes a list once at a time, then once for the roll-ups written meanwhile.
//   - adapt.go: ShardPolicy, the shard count a counter's write rate calls for.
//   - document.go: the roll-up document as readers see it.
//
// # Staleness
//
// An increment acknowledged at t is in a roll-up by
//
//	t + GROUP_COMMIT_INTERVAL + event delay + 1.5 × ROLLUP_INTERVAL + one refresh
//
// (1.5: an instance that did not write the previous roll-up waits half an interval more), or by
// t + 1 minute + ROLLUP_INTERVAL when its event is lost.
//
// Not a supported import: see package counters.
package rollup
