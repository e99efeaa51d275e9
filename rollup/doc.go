// Package rollup keeps the roll-up document rollups/{id}: the one cheap, slightly stale document apps
// read (and listen to) instead of summing shards. docs/design.md ("The roll-up engine") says why.
//
// Files and the guarantees they keep:
//
//   - engine.go: Refresh recomputes a counter's sums at one read time and writes them at most once
//     per ROLLUP_INTERVAL across instances, on condition that the roll-up is unchanged since read
//     (no hot document; an older computation never overwrites a newer one).
//   - carry.go: Notify answers an event at once; one event per instance carries every refresh until
//     a roll-up covers its change (bounded staleness without one held event per write).
//   - backend.go: the Firestore reads and writes of a refresh, and the opt-in mirror field.
//   - sweep.go: the scheduled sweep rolls up every counter touched within ROLLUP_SWEEP_LOOKBACK
//     whose roll-up is behind (a lost event or a dead instance is caught within a minute).
//   - tops.go, sweeptops.go: a group's top lists, refreshed with its roll-ups and after a delete.
//   - adapt.go: ShardPolicy, the shard count a counter's measured write rate calls for.
//   - document.go: the roll-up document as readers see it.
//
// # Staleness
//
// An increment acknowledged at t is in a roll-up by
//
//	t + GROUP_COMMIT_INTERVAL + event delay + 1.5 × ROLLUP_INTERVAL + one refresh
//
// (1.5: an instance that did not write the previous roll-up waits half an interval more), and by
// t + 1 minute (the sweep's period) + ROLLUP_INTERVAL when its event is lost. A reader sees the
// value at updated_at; its age while writes continue is at most about ROLLUP_INTERVAL plus the
// event delay.
//
// It never imports net/http or CloudEvents: the functions package adapts it to triggers.
//
// Not a supported import: see package counters for what users may import.
package rollup
