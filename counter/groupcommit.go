package counter

import (
	"context"
	"fmt"
	"time"

	"github.com/shardcount/counters/groupcommit"
	"github.com/shardcount/counters/shared/clock"
)

// maxGroupSize bounds the requests in one batch.
const maxGroupSize = 512

// maxKeyedPerGroup keeps a batch's commit within 500 writes.
const maxKeyedPerGroup = 450

// groupCommitter commits each counter's concurrent requests as one batch at most once per interval.
type groupCommitter = groupcommit.Committer[batched, reply]

// newGroupCommitter commits with commit, one batch per counter and interval.
func newGroupCommitter(interval time.Duration, c clock.Clock, commit func(context.Context, []batched) []reply) *groupCommitter {
	return groupcommit.New(groupcommit.Options[batched, reply]{Interval: interval, Clock: c, Commit: commit, Take: batchSize,
		Timeout: commitTimeout, Abandoned: func(id string, err error) reply {
			return reply{err: notApplied(fmt.Errorf("gave up waiting for the group write of counter %q: %w", id, err))}
		}})
}

// batchSize is how many of queue's first requests the next batch takes, within the bounds above
// and int64.
func batchSize(queue []batched) int {
	n, keyed := 0, 0
	var sum int64
	for n < len(queue) && n < maxGroupSize {
		req := queue[n]
		next, ok := addDeltas(sum, req.incs[0].Delta)
		if !ok {
			break
		}
		if req.key != nil { // a record each
			if keyed == maxKeyedPerGroup {
				break
			}
			keyed++
		}
		sum = next
		n++
	}
	return n
}
