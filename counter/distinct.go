package counter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// ErrMemberRequired refuses, before anything is written, a plain increment of a counter that counts
// distinct members (and a member increment of one that does not): see IncrementDistinct.
var ErrMemberRequired = errors.New("the counter counts distinct members: send a member, or configure the counter")

// ErrNotDistinct refuses a member increment of a counter that does not count distinct members.
var ErrNotDistinct = errors.New("the counter does not count distinct members")

// DistinctOutcome is what IncrementDistinct did.
type DistinctOutcome struct {
	// Counted is true when the member was new to the counter (all time) and was added.
	Counted bool
	// Shard received the member's count, -1 when nothing was written.
	Shard int
	// Windows lists the windows in whose current bucket the member was new and counted.
	Windows []string
}

// IncrementDistinct counts member once in counter id (which must be configured distinct), all time
// and in the current bucket of each of its windows. One transaction reads the member's documents
// (counters/{id}/members/{hash}, and {window}_{label}_{hash} per window), creates the missing ones,
// and adds 1 to the shard's count and to the buckets in which the member is new, in one commit: a
// member sent any number of times, by any number of instances, counts once per bucket. It bypasses
// group commit. A missing counter is ErrNotFound (a distinct counter is configured first). Members
// are counted within the counter's member epoch (shared.FieldMembersEpoch), read with its shard
// count: after a Reset, or a Delete and a new counter, every member counts again, on other
// instances once their cached configuration expires (Options.ShardCountCacheTTL).
//
// An error wraps ErrNotApplied or ErrOutcomeUnknown as Increment's do; resending is always safe.
func (s *Store) IncrementDistinct(ctx context.Context, id, member string) (DistinctOutcome, error) {
	if !s.life.Enter() {
		return DistinctOutcome{}, notApplied(ErrClosed)
	}
	defer s.life.Leave()
	fail := func(wrap func(error) error, err error) (DistinctOutcome, error) {
		return DistinctOutcome{}, wrap(fmt.Errorf("count member of %q: %w", id, err))
	}
	cfg, err := s.writeConfig(ctx, id)
	if err != nil {
		return fail(notApplied, err)
	}
	if !cfg.distinct {
		return fail(notApplied, ErrNotDistinct)
	}
	now := s.clock.Now()
	minute, due := s.touches.due(id)
	w := shardWrite{counter: id, shard: s.pickShard(id, cfg.numShards), at: now, member: true, stamp: due, minute: minute}
	var out DistinctOutcome
	sent := false // some attempt reached its commit
	var inTx error
	err = s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		out, inTx = s.distinctInTransaction(tx, s.memberRefs(id, cfg.membersEpoch+"\x00"+member, cfg.windows, now), cfg.windows, w, now)
		sent = sent || inTx == nil
		return inTx
	})
	switch {
	case err == nil:
		if out.Shard >= 0 {
			s.remember([]shardWrite{w})
		}
		return out, nil
	case inTx != nil || !sent:
		if status.Code(err) == codes.NotFound {
			s.shardCounts.forget(id)
			err = fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return fail(notApplied, err)
	}
	return fail(outcomeUnknown, err)
}

// distinctInTransaction is one attempt of IncrementDistinct: it reads the member documents refs (all
// time first, then one per window), then creates the missing ones and writes w with 1 for each.
func (s *Store) distinctInTransaction(tx *firestore.Transaction, refs []*firestore.DocumentRef, windows []string, w shardWrite, now time.Time) (DistinctOutcome, error) {
	snaps, err := tx.GetAll(refs)
	if err != nil {
		return DistinctOutcome{}, err
	}
	out := DistinctOutcome{Shard: -1}
	var ops []op
	for i, snap := range snaps {
		if snap.Exists() {
			continue
		}
		doc := map[string]any{shared.FieldCreatedAt: now}
		if i == 0 {
			out.Counted, w.delta = true, 1
		} else {
			window := windows[i-1]
			out.Windows = append(out.Windows, window)
			w.windows = append(w.windows, window)
			doc[shared.FieldExpiresAt] = bucketEnd(window, now).Add(memberGrace)
		}
		ops = append(ops, op{kind: opCreate, ref: refs[i], data: doc})
	}
	if len(ops) == 0 {
		return out, nil
	}
	out.Shard = w.shard
	ops = append(ops, s.shardWriteOps(w)...)
	return out, addToTransaction(tx, ops)
}

// memberGrace is how long a window's member documents outlive their bucket before Firestore's TTL
// policy on expires_at may delete them: past it the bucket no longer takes increments.
const memberGrace = 24 * time.Hour

// membersEpoch is the member epoch of counter document snap: its creation time and FieldMembersEpoch.
func membersEpoch(snap *firestore.DocumentSnapshot) string {
	epoch, _ := snap.Data()[shared.FieldMembersEpoch].(string)
	return fmt.Sprintf("%d/%s", snap.CreateTime.UnixNano(), epoch)
}

// memberRefs are the documents of a member (prefixed with its epoch) in counter id: all time, then one per
// window for its bucket holding now.
func (s *Store) memberRefs(id, member string, windows []string, now time.Time) []*firestore.DocumentRef {
	sum := sha256.Sum256([]byte(member))
	hash := hex.EncodeToString(sum[:])
	members := s.schema.CounterRef(s.client, id).Collection(shared.MembersCollection)
	refs := []*firestore.DocumentRef{members.Doc(hash)}
	for _, w := range windows {
		refs = append(refs, members.Doc(w+"_"+Bucket(w, now)+"_"+hash))
	}
	return refs
}

// bucketEnd is when the bucket of window w holding t ends.
func bucketEnd(w string, t time.Time) time.Time {
	t = t.UTC()
	switch w {
	case WindowHour:
		return t.Truncate(time.Hour).Add(time.Hour)
	case WindowDay:
		return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}
