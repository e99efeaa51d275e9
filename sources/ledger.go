package sources

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/counter"
	"github.com/shardcount/counters/groupcommit"
	"github.com/shardcount/counters/shared"
)

// The ledger: each change of a counted document is counted once, by a record created in the
// transaction that adds its delta to a shard. See docs/collection-counters.md, "How it stays exact".

// change is one change of a counted document in one collection counter.
type change struct {
	counter string
	key     string // the same for every delivery of the change
	delta   int64
	value   int64     // what the document adds to the counter after the change
	at      time.Time // its commit time: the window buckets it counts in
	write   Write     // the document's write, to judge whether a base holds it
	base    baseline  // for a counter without a base
}

// changeReply is what committing a change did: counted on shard, a duplicate, or held by the base.
type changeReply struct {
	counted, duplicate, inBase bool
	outOfRange                 bool // a sum counter took it otherwise than in full
	shard                      int
	err                        error
}

// ErrNotItsCounter refuses a change of a counter its declaration did not create: an ordinary
// counter, or another declaration's. Such a change never counts.
var ErrNotItsCounter = errors.New("the counter is not a collection counter of the change's declaration")

// errBaseMoved: the counter's base changed after its changes were judged against it.
var errBaseMoved = errors.New("the collection counter's base changed while its changes were judged")

// maxChangeAttempts bounds the failed transactions of one batch of changes; a commit that finds
// records of some changes (AlreadyExists) is not one: it answers them, and the rest commit again.
const maxChangeAttempts = 5

// maxChangesPerCommit keeps a commit within Firestore's 500 writes: a record each, a shard and the
// counter document.
const maxChangesPerCommit = 450

// changeRecordTTL is how long a change's record is kept: past Eventarc's 24 h of redeliveries.
const changeRecordTTL = 25 * time.Hour

// maxInBaseReads bounds the base reads of one batch at once.
const maxInBaseReads = 32

// newChangeCommitter commits each counter's changes at most once per interval, measured from the
// end of a commit: one transaction an interval on a counter's document, in commit time too.
func (c *Counting) newChangeCommitter(interval time.Duration) *groupcommit.Committer[change, changeReply] {
	return groupcommit.New(groupcommit.Options[change, changeReply]{Interval: interval, Clock: c.clock, Commit: c.commitChanges,
		Take: changesToTake, AfterCommit: true, Timeout: changeCommitTimeout, Abandoned: func(id string, err error) changeReply {
			return changeReply{err: fmt.Errorf("gave up waiting for the commit of counter %q: %w", id, err)}
		}})
}

// changeCommitTimeout bounds one batch's commits, base reads included, as counter bounds a commit.
const changeCommitTimeout = 10 * time.Second

// changesToTake is how many of queue's first changes one commit takes, within int64 and
// maxChangesPerCommit.
func changesToTake(queue []change) int {
	var sum int64
	for n, ch := range queue {
		next := sum + ch.delta
		if n == maxChangesPerCommit || (next > sum) != (ch.delta > 0) {
			return n
		}
		sum = next
	}
	return len(queue)
}

// commit counts ch once, through its counter's batch.
func (c *Counting) commit(ctx context.Context, ch change) changeReply {
	if !c.life.Enter() {
		return changeReply{err: fmt.Errorf("change %s of counter %q: %w", ch.key, ch.counter, counter.ErrClosed)}
	}
	defer c.life.Leave()
	if c.changes == nil {
		return c.commitChanges(ctx, []change{ch})[0]
	}
	return c.changes.Add(ctx, ch.counter, ch)
}

// commitChanges counts batch's changes, all of one counter: each change not in the base gets a
// record of its own, created in the transaction that adds its delta to a shard.
func (c *Counting) commitChanges(ctx context.Context, batch []change) []changeReply {
	replies := make([]changeReply, len(batch))
	id := batch[0].counter
	open := firstOfEachKey(batch, replies)
	inBase := map[int]bool{} // of open's changes, judged at judgedAt
	var judgedAt time.Time
	var err error
	for failures := 0; failures < maxChangeAttempts && len(open) > 0; {
		var base time.Time
		var source string
		if base, source, err = c.changeBase(ctx, id, batch[open[0]].base); err != nil {
			break
		}
		open = refuseOthers(batch, open, source, replies)
		if !base.Equal(judgedAt) {
			var in []bool
			if in, err = c.inBaseAll(ctx, batch, open, base); err != nil {
				break
			}
			for k, i := range open {
				inBase[i] = in[k]
			}
			judgedAt = base
		}
		var fresh []int
		for _, i := range open {
			if !inBase[i] {
				fresh = append(fresh, i)
			}
		}
		var w *counter.ShardWrite
		var outOfRange map[int]bool
		w, outOfRange, err = c.changesInTransaction(ctx, id, batch, fresh, base, failures > 0)
		if err == nil {
			for _, i := range open {
				replies[i] = changeReply{inBase: true}
				if !inBase[i] {
					replies[i] = changeReply{counted: true, shard: w.Shard(), outOfRange: outOfRange[i]}
				}
			}
			return replies
		}
		if errors.Is(err, ErrNotItsCounter) {
			continue // the counter changed hands: refuseOthers answers
		}
		if status.Code(err) == codes.AlreadyExists {
			// Another delivery of some change committed first: answer those, commit the rest.
			if open, err = c.takeOutRecorded(ctx, id, batch, open, replies); err != nil {
				break
			}
			continue
		}
		failures++
		if !errors.Is(err, errBaseMoved) {
			c.collections.Reconfigured(id)
		}
		if ctx.Err() != nil {
			break
		}
	}
	for _, i := range open {
		replies[i] = changeReply{err: err}
	}
	return replies
}

// refuseOthers answers the changes of batch at open that source's declaration did not make with
// ErrNotItsCounter, and returns the others.
func refuseOthers(batch []change, open []int, source string, replies []changeReply) []int {
	var mine []int
	for _, i := range open {
		if !SameSource(source, batch[i].base.source()) {
			replies[i] = changeReply{err: fmt.Errorf("counter %q counts %q: %w", batch[i].counter, source, ErrNotItsCounter)}
			continue
		}
		mine = append(mine, i)
	}
	return mine
}

// firstOfEachKey answers each later delivery of a change in batch as a duplicate and returns the
// indexes of the first ones.
func firstOfEachKey(batch []change, replies []changeReply) []int {
	var first []int
	seen := map[string]bool{}
	for i, ch := range batch {
		if seen[ch.key] {
			replies[i] = changeReply{duplicate: true}
			continue
		}
		seen[ch.key] = true
		first = append(first, i)
	}
	return first
}

// changesInTransaction adds the fresh changes' deltas to one shard (a sum's within int64: planSum,
// reporting the changes it took otherwise than in full) and creates their records, in one
// transaction that holds the counter at base; errBaseMoved, or AlreadyExists when a record exists.
// With no fresh change it only checks the base.
func (c *Counting) changesInTransaction(ctx context.Context, id string, batch []change, fresh []int, base time.Time, verify bool) (*counter.ShardWrite, map[int]bool, error) {
	var written *counter.ShardWrite
	var outOfRange map[int]bool
	err := c.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		written, outOfRange = nil, nil
		snap, err := tx.Get(c.reader.CounterRef(id))
		if status.Code(err) == codes.NotFound {
			return errBaseMoved
		}
		if err != nil {
			return fmt.Errorf("read the counter: %w", err)
		}
		if source, _ := snap.Data()[shared.FieldSource].(string); len(fresh) > 0 && !SameSource(source, batch[fresh[0]].base.source()) {
			return ErrNotItsCounter
		}
		if at, done := baseOf(snap); !done || !at.Equal(base) {
			return errBaseMoved
		}
		if len(fresh) == 0 {
			return nil
		}
		deltas := make([]counter.TimedDelta, len(fresh))
		for k, i := range fresh {
			deltas[k] = counter.TimedDelta{At: batch[i].at, Delta: batch[i].delta}
		}
		stamped, _ := snap.Data()[shared.FieldTouchedMinute].(int64)
		w, err := c.collections.PlanChanges(ctx, id, deltas, stamped, verify)
		if errors.Is(err, counter.ErrNoCollectionCounter) {
			return errBaseMoved // the cached configuration predates the counter's conversion
		}
		if err != nil {
			return err
		}
		sums, err := c.planSum(ctx, tx, snap, w, batch, fresh)
		if err != nil {
			return err
		}
		if err := w.AddTo(tx); err != nil {
			return err
		}
		for path, u := range sums.unapplied {
			if err := c.recordUnapplied(tx, id, path, u); err != nil {
				return err
			}
		}
		outOfRange = sums.outOfRange
		expires := c.clock.Now().Add(changeRecordTTL)
		for _, i := range fresh {
			record := map[string]any{shared.FieldChangeDelta: batch[i].delta, shared.FieldExpiresAt: expires}
			if err := tx.Create(c.changeRecordRef(id, batch[i].key), record); err != nil {
				return err
			}
		}
		written = w
		return nil
	})
	if errors.Is(err, errBaseMoved) {
		c.collections.Reconfigured(id)
	}
	if err == nil && written != nil {
		written.Committed()
	}
	return written, outOfRange, err
}

// takeOutRecorded answers the changes of batch at open whose records exist as duplicates and
// returns the others; open and an error when none exists.
func (c *Counting) takeOutRecorded(ctx context.Context, id string, batch []change, open []int, replies []changeReply) ([]int, error) {
	refs := make([]*firestore.DocumentRef, len(open))
	for k, i := range open {
		refs[k] = c.changeRecordRef(id, batch[i].key)
	}
	snaps, err := c.client.GetAll(ctx, refs)
	if err != nil {
		return open, fmt.Errorf("read the change records of counter %q: %w", id, err)
	}
	var rest []int
	for k, i := range open {
		if snaps[k].Exists() {
			replies[i] = changeReply{duplicate: true}
		} else {
			rest = append(rest, i)
		}
	}
	if len(rest) == len(open) {
		return open, fmt.Errorf("commit the changes of counter %q: a record already existed, yet none does now", id)
	}
	return rest, nil
}

// inBaseAll asks, concurrently, whether each change batch[indexes[k]] is in the base read at base.
func (c *Counting) inBaseAll(ctx context.Context, batch []change, indexes []int, base time.Time) ([]bool, error) {
	in := make([]bool, len(indexes))
	var g errgroup.Group
	g.SetLimit(maxInBaseReads)
	for k, i := range indexes {
		g.Go(func() error {
			var err error
			if in[k], err = c.inBase(ctx, batch[i], base); err != nil {
				return fmt.Errorf("is change %s in the base: %w", batch[i].key, err)
			}
			return nil
		})
	}
	return in, g.Wait()
}

// changeRecordRef is the record of counter id's change key.
func (c *Counting) changeRecordRef(id, key string) *firestore.DocumentRef {
	return c.reader.CounterRef(id).Collection(shared.ChangeLedgerCollection).Doc(key)
}
