package counter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
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
// and in the current bucket of each of its windows. It reads the member's documents
// (counters/{id}/counter_members/{hash}, and {window}_{label}_{hash} per window; of a counter without
// shared.FieldMemberCollection, also their twins in the legacy members collection, a member found in
// either being counted, and creates both), then commits the creation of
// the missing ones with 1 added to a shard's count and to the buckets in which the member is new. The
// creations are the commit's preconditions, so of commits racing for a member document one applies and
// the others are planned again from a new read; no transaction holds a lock while others wait. A member
// sent any number of times, by any number of instances, counts once per bucket. It bypasses group
// commit. A missing counter is ErrNotFound (a distinct counter is configured first). Members are
// counted within the counter's member epoch (shared.FieldMembersEpoch), read with its shard count:
// after a Reset, or a Delete and a new counter, every member counts again, on other instances once
// their cached configuration expires (Options.ShardCountCacheTTL).
//
// An error wraps ErrNotApplied or ErrOutcomeUnknown as Increment's do; resending is always safe.
func (s *Store) IncrementDistinct(ctx context.Context, id, member string) (DistinctOutcome, error) {
	if !s.life.Enter() {
		return DistinctOutcome{}, notApplied(ErrClosed)
	}
	defer s.life.Leave()
	cfg, err := s.writeConfig(ctx, id)
	if err != nil {
		return failMember(id, notApplied, err)
	}
	if !cfg.distinct {
		return failMember(id, notApplied, ErrNotDistinct)
	}
	now := s.clock.Now()
	minute, due := s.touches.due(id)
	m := memberWrite{
		refs:    s.memberRefs(id, shared.MembersCollection, cfg.membersEpoch+"\x00"+member, cfg.windows, now),
		windows: cfg.windows,
		shard:   shardWrite{counter: id, shard: s.pickShard(id, cfg.numShards), parts: []timedDelta{{at: now, delta: 1}}, stamp: due, minute: minute},
		writeID: newWriteID(),
		now:     now,
	}
	if cfg.legacyMembers {
		m.legacy = s.memberRefs(id, shared.LegacyMembersCollection, cfg.membersEpoch+"\x00"+member, cfg.windows, now)
	}
	out, err := s.commitMember(ctx, m)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			s.shardCounts.forget(id)
		}
		return DistinctOutcome{}, err
	}
	if out.Shard >= 0 {
		s.remember([]shardWrite{m.shard})
	}
	return out, nil
}

// failMember is IncrementDistinct's failure of counter id: err, wrapped with wrap (notApplied or
// outcomeUnknown).
func failMember(id string, wrap func(error) error, err error) (DistinctOutcome, error) {
	return DistinctOutcome{}, wrap(fmt.Errorf("count member of %q: %w", id, err))
}

// memberWrite is what IncrementDistinct commits for one member.
type memberWrite struct {
	// refs are the member's documents: all time, then one per window (memberRefs).
	refs []*firestore.DocumentRef
	// legacy, nil or as long as refs, are their twins in shared.LegacyMembersCollection: a member
	// document counts as existing when either exists, and is created in both.
	legacy  []*firestore.DocumentRef
	windows []string
	// shard is the shard write, before the member's deltas are added to it.
	shard shardWrite
	// writeID is on every member document the commit creates: a read finds what an attempt applied.
	writeID string
	now     time.Time
}

// extraMemberAttempts bounds commitMember's attempts beyond len(refs)+1: a commit refused by a
// member document another commit created leaves one document fewer to create, so len(refs)+1
// attempts settle a member; the rest allow for contention (Aborted) and one commit sent again after
// it got no answer.
const extraMemberAttempts = 3

// commitMember reads m's documents and commits the creation of the missing ones with their counts,
// until one commit applies or every document exists. An error wraps ErrNotApplied only when no
// commit of m applied or ever will; otherwise ErrOutcomeUnknown.
func (s *Store) commitMember(ctx context.Context, m memberWrite) (DistinctOutcome, error) {
	var unknown error  // why a commit of m may have applied, or may still apply
	var noAnswer error // the first commit of m that got no answer: one more may be sent
	refused := false   // the last commit failed AlreadyExists: a read tells by whom
	attempts := len(m.refs) + 1 + extraMemberAttempts
	for range attempts {
		snaps, err := s.readMembers(ctx, append(slices.Clip(m.refs), m.legacy...), unknown != nil)
		switch {
		case err != nil && unknown != nil:
			return failMember(m.shard.counter, outcomeUnknown, fmt.Errorf("%w; reading it back failed: %w", unknown, err))
		case err != nil:
			return failMember(m.shard.counter, notApplied, err)
		}
		snaps = m.eitherTwin(snaps)
		out, creates, w, applied := m.plan(snaps)
		if applied || len(creates) == 0 {
			// applied: an attempt whose answer was lost created them; else others did, so no commit
			// of m can apply any more.
			return out, nil
		}
		if refused {
			// Another commit created a document the refused commit meant to create, and so did every
			// earlier commit of m (each read found fewer missing): none of them can apply.
			unknown, refused = nil, false
		}
		err = s.commitOps(ctx, append(creates, s.shardWriteOps(w)...))
		if err != nil {
			err = fmt.Errorf("commit member: %w", err)
		}
		code := status.Code(err)
		switch {
		case err == nil:
			return out, nil
		case code == codes.NotFound && unknown == nil: // the touched stamp: the counter was deleted
			return failMember(m.shard.counter, notApplied, fmt.Errorf("%w: %w", ErrNotFound, err))
		case code == codes.AlreadyExists:
			// By another commit, or by an earlier try of this one that the client library sent again.
			refused = true
		case code == codes.Aborted || code == codes.NotFound: // contention; the next read tells
		case noAnswer != nil:
			return failMember(m.shard.counter, outcomeUnknown, fmt.Errorf("%w; sending it again failed: %w", noAnswer, err))
		default:
			noAnswer = err
		}
		unknown = err
	}
	// Every attempt committed and failed; the last may have been refused by an earlier try of its own.
	return failMember(m.shard.counter, outcomeUnknown, fmt.Errorf("gave up after %d attempts: %w", attempts, unknown))
}

// readMembers reads refs; after a commit without an answer, within resolveTimeout whatever ctx says.
func (s *Store) readMembers(ctx context.Context, refs []*firestore.DocumentRef, settling bool) ([]*firestore.DocumentSnapshot, error) {
	if settling {
		var cancel context.CancelFunc
		ctx, cancel = detached(ctx, resolveTimeout)
		defer cancel()
	}
	snaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read member: %w", err)
	}
	return snaps, nil
}

// plan is what m's commit does given snaps, the member documents as read (in refs' order). applied is
// true when they carry m.writeID: an earlier commit of m applied, and out says what it counted.
// Otherwise creates are the missing documents' creations and w the shard write counting the member
// where it is new (no creates when every document exists).
func (m memberWrite) plan(snaps []*firestore.DocumentSnapshot) (out DistinctOutcome, creates []op, w shardWrite, applied bool) {
	ours := func(snap *firestore.DocumentSnapshot) bool {
		id, _ := snap.DataAt(shared.FieldMemberWrite)
		return snap.Exists() && id == m.writeID
	}
	applied = slices.ContainsFunc(snaps, ours)
	counts := func(snap *firestore.DocumentSnapshot) bool { return ours(snap) || !applied && !snap.Exists() }
	out, w = DistinctOutcome{Shard: -1}, m.shard
	for i, snap := range snaps {
		if !counts(snap) {
			continue
		}
		doc := map[string]any{shared.FieldCreatedAt: m.now, shared.FieldMemberWrite: m.writeID}
		if i == 0 {
			out.Counted, w.delta = true, 1
		} else {
			window := m.windows[i-1]
			out.Windows = append(out.Windows, window)
			w.windows = append(w.windows, window)
			doc[shared.FieldExpiresAt] = bucketEnd(window, m.now).Add(memberGrace)
		}
		creates = append(creates, op{kind: opCreate, ref: m.refs[i], data: doc})
		if m.legacy != nil {
			creates = append(creates, op{kind: opCreate, ref: m.legacy[i], data: doc})
		}
	}
	if len(creates) > 0 {
		out.Shard = w.shard
	}
	if applied {
		creates = nil
	}
	return out, creates, w, applied
}

// eitherTwin folds snaps, read from m.refs then m.legacy, into one per member document: the
// existing one of each pair (the first when both or neither exist).
func (m memberWrite) eitherTwin(snaps []*firestore.DocumentSnapshot) []*firestore.DocumentSnapshot {
	if m.legacy == nil {
		return snaps
	}
	current, legacy := snaps[:len(m.refs)], snaps[len(m.refs):]
	for i, snap := range current {
		if !snap.Exists() && legacy[i].Exists() {
			current[i] = legacy[i]
		}
	}
	return current
}

// memberGrace is how long a window's member documents outlive their bucket before Firestore's TTL
// policy on expires_at may delete them: past it the bucket no longer takes increments.
const memberGrace = 24 * time.Hour

// membersEpoch is the member epoch of counter document snap: its creation time and FieldMembersEpoch.
func membersEpoch(snap *firestore.DocumentSnapshot) string {
	epoch, _ := snap.Data()[shared.FieldMembersEpoch].(string)
	return fmt.Sprintf("%d/%s", snap.CreateTime.UnixNano(), epoch)
}

// memberRefs are the documents of a member (prefixed with its epoch) in collection of counter id: all
// time, then one per window for its bucket holding now.
func (s *Store) memberRefs(id, collection, member string, windows []string, now time.Time) []*firestore.DocumentRef {
	sum := sha256.Sum256([]byte(member))
	hash := hex.EncodeToString(sum[:])
	members := s.schema.CounterRef(s.client, id).Collection(collection)
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
