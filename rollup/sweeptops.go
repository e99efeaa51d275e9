package rollup

import (
	"context"
	"slices"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/shardcount/counters/shared"
)

// topsCheck is a roll-up whose top lists the sweep compares with it.
type topsCheck struct {
	id      string
	rollup  *Document
	version time.Time // commit time
	windows []string
}

// topsDueList gathers a sweep's failing top list refreshes, one per group, tried until `until`.
type topsDueList struct {
	until time.Time
	list  []topsDue
}

// add records d as due and failed.
func (l *topsDueList) add(d topsDue, res *SweepResult) {
	res.TopsFailed++
	for i := range l.list {
		if l.list[i].Group == d.Group {
			l.list[i] = mergeDue(l.list[i], d)
			return
		}
	}
	l.list = append(l.list, d)
}

// mergeDue is one refresh for a and b, of one group.
func mergeDue(a, b topsDue) topsDue {
	for _, w := range b.Windows {
		if !slices.Contains(a.Windows, w) {
			a.Windows = append(a.Windows, w)
		}
	}
	if b.WrittenAt.After(a.WrittenAt) {
		a.WrittenAt = b.WrittenAt
	}
	return a
}

// retry refreshes the lists left due; failures stay due.
func (l *topsDueList) retry(ctx context.Context, fs *firestoreBackend, due []topsDue, res *SweepResult) {
	for _, d := range due {
		l.refresh(ctx, fs, d, res)
	}
}

// refresh refreshes d's lists by l.until; d stays due on failure.
func (l *topsDueList) refresh(ctx context.Context, fs *firestoreBackend, d topsDue, res *SweepResult) {
	res.TopsBehind++
	ctx, cancel := context.WithDeadline(ctx, l.until)
	defer cancel()
	if err := fs.refreshTops(ctx, d.Group, d.Windows, d.WrittenAt); err != nil {
		l.add(d, res)
	}
}

// sweepTops refreshes the groups whose lists are behind checks' roll-ups (or still rank a counter
// that left), one read per list; failures go to due.
func (e *Engine) sweepTops(ctx context.Context, checks []topsCheck, res *SweepResult, due *topsDueList) {
	fs := e.sweeper
	type listKey struct{ group, window string }
	var keys []listKey
	need := func(group string, windows []string) {
		for _, w := range append([]string{shared.TopWindowAll}, windows...) {
			if k := (listKey{group, w}); !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	for _, c := range checks {
		if c.rollup.Group != "" {
			need(c.rollup.Group, c.windows)
		}
		if c.rollup.LeftGroup != "" {
			need(c.rollup.LeftGroup, c.rollup.windowNames())
		}
	}
	if len(keys) == 0 {
		return
	}
	refs := make([]*firestore.DocumentRef, len(keys))
	for i, k := range keys {
		refs[i] = fs.schema.TopRef(fs.client, k.group, k.window)
	}
	lists := make(map[listKey]TopList, len(keys))
	snaps, err := fs.client.GetAll(ctx, refs)
	if err == nil {
		res.Reads += len(snaps)
		for i, snap := range snaps {
			var l TopList
			if snap.Exists() {
				_ = snap.DataTo(&l) // undecodable: behind
			}
			lists[keys[i]] = l
		}
	}
	var behind []topsDue
	mark := func(group, window string, writtenAt time.Time) {
		d := topsDue{Group: group, WrittenAt: writtenAt}
		if window != shared.TopWindowAll {
			d.Windows = []string{window}
		}
		for i := range behind {
			if behind[i].Group == group {
				behind[i] = mergeDue(behind[i], d)
				return
			}
		}
		behind = append(behind, d)
	}
	for _, c := range checks {
		if g := c.rollup.Group; g != "" {
			for _, w := range append([]string{shared.TopWindowAll}, c.windows...) {
				if l, ok := lists[listKey{g, w}]; !ok || l.UpdatedAt.Before(c.version) {
					mark(g, w, c.version)
				}
			}
		}
		if g := c.rollup.LeftGroup; g != "" {
			for _, w := range append([]string{shared.TopWindowAll}, c.rollup.windowNames()...) {
				l, ok := lists[listKey{g, w}]
				if !ok || slices.ContainsFunc(l.Top, func(e TopEntry) bool { return e.Counter == c.id }) {
					mark(g, w, c.version)
				}
			}
		}
	}
	for _, d := range behind {
		due.refresh(ctx, fs, d, res)
	}
}
