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
// distinct members (and a member increment of one that does not): see Request.Member.
var ErrMemberRequired = errors.New("the counter counts distinct members: send a member, or configure the counter")

// ErrNotDistinct refuses a member increment of a counter that does not count distinct members.
var ErrNotDistinct = errors.New("the counter does not count distinct members")

// memberOutcome is what a member increment did.
type memberOutcome struct {
	// counted: the member was new to the counter (all time) and was added.
	counted bool
	// shard received the member's count, -1 when nothing was written.
	shard int
	// windows lists the windows in whose current bucket the member was new and counted.
	windows   []string
	duplicate bool
	plannedAt time.Time
}

// result is out as Apply's Result for counter id.
func (out memberOutcome) result(id string) Result {
	var delta int64
	if out.shard >= 0 { // the member was new all time or in a bucket
		delta = 1
	}
	return Result{Applied: []AppliedIncrement{{Counter: id, Delta: delta, Shard: out.shard}}, Counted: out.counted,
		Duplicate: out.duplicate, Windows: out.windows, PlannedAt: out.plannedAt}
}

// incrementDistinct counts r.Member once in its counter (which must be configured distinct), all time
// and in the current bucket of each of its windows. It reads the member's documents
// (counters/{id}/counter_members/{hash}, and {window}_{label}_{hash} per window; of a counter without
// shared.FieldMemberCollection, also their twins in the legacy members collection, a member found in
// either being counted, and creates both) and its shard's fence, then commits the creation of the
// missing ones with 1 added to a shard's count and to the buckets in which the member is new, and an
// update of the fence. The creations are the commit's preconditions, so of commits racing for a
// member document one applies and the others are planned again from a new read; no transaction holds
// a lock while others wait. A member sent any number of times, by any number of instances, counts
// once per bucket. It bypasses group commit. A missing counter is ErrNotFound, also on an instance
// whose cache still holds it: Delete removes the fences.
//
// Members are counted within the counter's member epoch (shared.FieldMembersEpoch): after a Reset,
// or a Delete and a new counter, every member counts again. The fence ties a commit to the epoch it
// was planned in: Reset removes the old epoch's fences, so a plan made from a stale cached
// configuration fails, and is planned again from a fresh one.
//
// With a key, the key's dedupe record is created with the first application (also when it counted
// nothing) and holds its outcome (ErrKeyReused with another counter or member). The call's time and
// write ID are fixed for all its attempts, so they count in one bucket.
func (s *Store) incrementDistinct(ctx context.Context, r Request) (Result, error) {
	if r.Delta != 0 && r.Delta != 1 {
		return Result{}, fmt.Errorf("count member of %q: delta %d, want 0 or 1", r.Counter, r.Delta)
	}
	if !s.life.Enter() {
		return Result{}, notApplied(ErrClosed)
	}
	defer s.life.Leave()
	out, err := s.countMember(ctx, r.Counter, r.Member, r.Key)
	if err != nil && !errors.Is(err, ErrKeyReused) {
		return Result{}, err
	}
	return out.result(r.Counter), err
}

// countMember is incrementDistinct's plans of member's count in counter id.
func (s *Store) countMember(ctx context.Context, id, member string, key *Key) (memberOutcome, error) {
	call := memberCall{counter: id, member: member, key: key, now: recordNow(s.clock), writeID: newWriteID()}
	if key != nil {
		call.fingerprint = memberFingerprint(id, member)
	}
	for plans := 1; ; plans++ {
		cfg, err := s.writeConfig(ctx, id)
		switch {
		case err != nil:
			return failMember(id, notApplied, err)
		case !cfg.distinct:
			return failMember(id, notApplied, ErrNotDistinct)
		}
		m := s.planMember(call, cfg)
		out, err := s.commitMember(ctx, m)
		if !errors.Is(err, errFenceDown) {
			if err == nil && out.shard >= 0 && !out.duplicate {
				s.remember([]shardWrite{m.shard})
			}
			return out, err
		}
		// The epoch moved, the counter was deleted, or the shard's fence is yet to be raised; no
		// commit of m applied or will (see commitMember). Only the last needs a transaction.
		s.shardCounts.forget(id)
		if plans == maxMemberPlans {
			return failMember(id, notApplied, fmt.Errorf("gave up after %d plans: %w", plans, err))
		}
		if fresh, err := s.writeConfig(ctx, id); err != nil || fresh.membersEpoch != m.epoch {
			continue // a new epoch (a stale cache), or the error, on the next plan
		}
		if err := s.raiseFences(ctx, id, m.epoch); err != nil && !errors.Is(err, errEpochMoved) {
			return failMember(id, notApplied, err)
		}
	}
}

// maxMemberPlans bounds countMember's plans: a fence down is followed by one plan in the new
// epoch, or one more once the fences are raised; the rest allow for Resets in between.
const maxMemberPlans = 4

// errFenceDown: a member's shard fence is missing (or its commit found it, or the counter document,
// missing): the plan's epoch is over, the counter was deleted, or the fence is yet to be raised.
var errFenceDown = errors.New("the member epoch's fence is down")

// errEpochMoved: raiseFences found another member epoch, or a counter that is not distinct.
var errEpochMoved = errors.New("the member epoch moved")

// failMember is countMember's failure of counter id: err, wrapped with wrap (notApplied or
// outcomeUnknown).
func failMember(id string, wrap func(error) error, err error) (memberOutcome, error) {
	return memberOutcome{}, wrap(fmt.Errorf("count member of %q: %w", id, err))
}

// memberCall is what one member increment counts, fixed for all its plans and attempts.
type memberCall struct {
	counter, member string
	key             *Key
	fingerprint     string // the key's: memberFingerprint
	// now is the call's time: the buckets it counts in.
	now time.Time
	// writeID is on every document a commit of the call creates: a read finds what an attempt applied.
	writeID string
}

// memberWrite is one plan of a memberCall: what its commits write, given the counter's configuration.
type memberWrite struct {
	memberCall
	// refs are the member's documents: all time, then one per window (memberRefs).
	refs []*firestore.DocumentRef
	// legacy, nil or as long as refs, are their twins in shared.LegacyMembersCollection: a member
	// document counts as existing when either exists, and is created in both.
	legacy  []*firestore.DocumentRef
	windows []string
	// epoch is the member epoch the plan counts in, and fence the fence of its shard in that epoch.
	epoch string
	fence *firestore.DocumentRef
	// shard is the shard write, before the member's deltas are added to it.
	shard shardWrite
}

// planMember plans call in the configuration cfg: the member's documents in its epoch, a shard and
// that shard's fence.
func (s *Store) planMember(call memberCall, cfg writeConfig) memberWrite {
	id := call.counter
	minute, due := s.touches.due(id)
	shard := s.pickShard(id, cfg.numShards)
	member := cfg.membersEpoch + "\x00" + call.member
	m := memberWrite{
		memberCall: call,
		refs:       s.memberRefs(id, shared.MembersCollection, member, cfg.windows, call.now),
		windows:    cfg.windows,
		epoch:      cfg.membersEpoch,
		fence:      s.fenceRef(id, cfg.membersEpoch, shard),
		shard:      shardWrite{counter: id, shard: shard, parts: []timedDelta{{at: call.now, delta: 1}}, stamp: due, minute: minute},
	}
	if cfg.legacyMembers {
		m.legacy = s.memberRefs(id, shared.LegacyMembersCollection, member, cfg.windows, call.now)
	}
	return m
}

// memberReads are the documents a commit of m reads first: its member documents, their legacy twins,
// its fence, and its key's record.
func (s *Store) memberReads(m memberWrite) []*firestore.DocumentRef {
	refs := slices.Concat(m.refs, m.legacy, []*firestore.DocumentRef{m.fence})
	if m.key != nil {
		refs = append(refs, s.dedupeRecordRef(*m.key))
	}
	return refs
}

// extraMemberAttempts bounds commitMember's attempts beyond len(refs)+2: a commit refused by a
// document another commit created (a member document, the key's record) leaves one document fewer
// to create, so len(refs)+2 attempts settle a member; the rest allow for contention (Aborted) and
// one commit sent again after it got no answer.
const extraMemberAttempts = 3

// commitMember reads m's documents and commits the creation of the missing ones with their counts,
// until one commit applies or nothing is left to create. An error wraps ErrNotApplied only when no
// commit of m applied or ever will; otherwise ErrOutcomeUnknown. errFenceDown (not applied) when a
// read finds m's fence missing and no commit of m applied (its member documents, which Reset and
// Delete leave, do not carry its write ID): m can never apply (a fence that was deleted never comes
// back for its epoch), and only a new plan can tell what to do.
func (s *Store) commitMember(ctx context.Context, m memberWrite) (memberOutcome, error) {
	var unknown error  // why a commit of m may have applied, or may still apply
	var noAnswer error // the first commit of m that got no answer: one more may be sent
	refused := false   // the last commit failed AlreadyExists: a read tells by whom
	settled := func() func(error) error {
		if unknown != nil {
			return outcomeUnknown
		}
		return notApplied
	}
	attempts := len(m.refs) + 2 + extraMemberAttempts
	for range attempts {
		snaps, err := s.readMembers(ctx, s.memberReads(m), unknown != nil)
		switch {
		case err != nil && unknown != nil:
			return failMember(m.counter, outcomeUnknown, fmt.Errorf("%w; reading it back failed: %w", unknown, err))
		case err != nil:
			return failMember(m.counter, notApplied, err)
		}
		snaps = m.eitherTwin(snaps)
		p := s.planCommit(m, snaps)
		switch {
		case errors.Is(p.err, ErrKeyReused):
			return p.out, fmt.Errorf("count member of %q: %w", m.counter, p.err)
		case p.err != nil:
			return failMember(m.counter, settled(), p.err)
		case p.done:
			return p.out, nil
		case p.fenceDown:
			return failMember(m.counter, notApplied, errFenceDown)
		}
		if refused {
			// Another commit created a document the refused commit meant to create, and so did every
			// earlier commit of m (each read found fewer missing): none of them can apply.
			unknown, refused = nil, false
		}
		err = s.commitOps(ctx, p.ops)
		if err != nil {
			err = fmt.Errorf("commit member: %w", err)
		}
		code := status.Code(err)
		switch {
		case err == nil:
			return p.out, nil
		case code == codes.AlreadyExists:
			// By another commit, or by an earlier try of this one that the client library sent again.
			refused = true
		case code == codes.Aborted || code == codes.NotFound: // contention, or the fence fell; the next read tells
		case noAnswer != nil:
			return failMember(m.counter, outcomeUnknown, fmt.Errorf("%w; sending it again failed: %w", noAnswer, err))
		default:
			noAnswer = err
		}
		unknown = err
	}
	// Every attempt committed and failed; the last may have been refused by an earlier try of its own.
	return failMember(m.counter, outcomeUnknown, fmt.Errorf("gave up after %d attempts: %w", attempts, unknown))
}

// memberCommit is what one attempt of a memberWrite does, given what it read.
type memberCommit struct {
	out memberOutcome
	// done: out is the answer, nothing (more) to write: an earlier commit of the call applied, the
	// key was applied before, or the member is known in every bucket.
	done bool
	// fenceDown: the plan's fence is missing (errFenceDown).
	fenceDown bool
	// ops are the commit: the missing member documents' creations, the key's record, the fence's
	// update and the shard write.
	ops []op
	// err: the key's record could not be read, or the key was used for another member (ErrKeyReused,
	// with the first application as out).
	err error
}

// planCommit is what m's commit does given snaps, the documents of memberReads as read. An earlier
// commit of m applied when the member documents (or the key's record) carry m.writeID, and the
// outcome is then what it counted.
func (s *Store) planCommit(m memberWrite, snaps []*firestore.DocumentSnapshot) memberCommit {
	if m.key != nil {
		if rec := snaps[len(snaps)-1]; rec.Exists() {
			return keyedMemberOutcome(rec, m)
		}
	}
	members, fence := snaps[:len(m.refs)], snaps[len(m.refs)]
	ours := func(snap *firestore.DocumentSnapshot) bool {
		id, _ := snap.DataAt(shared.FieldMemberWrite)
		return snap.Exists() && id == m.writeID
	}
	applied := slices.ContainsFunc(members, ours)
	if !applied && !fence.Exists() {
		return memberCommit{fenceDown: true}
	}
	counts := func(snap *firestore.DocumentSnapshot) bool { return ours(snap) || !applied && !snap.Exists() }
	out, w := memberOutcome{shard: -1, plannedAt: m.now}, m.shard
	var creates []op
	for i, snap := range members {
		if !counts(snap) {
			continue
		}
		doc := map[string]any{shared.FieldCreatedAt: m.now, shared.FieldMemberWrite: m.writeID}
		if i == 0 {
			out.counted, w.delta = true, 1
		} else {
			window := m.windows[i-1]
			out.windows = append(out.windows, window)
			w.windows = append(w.windows, window)
			doc[shared.FieldExpiresAt] = bucketEnd(window, m.now).Add(memberGrace)
		}
		creates = append(creates, op{kind: opCreate, ref: m.refs[i], data: doc})
		if m.legacy != nil {
			creates = append(creates, op{kind: opCreate, ref: m.legacy[i], data: doc})
		}
	}
	if len(creates) > 0 {
		out.shard = w.shard
	}
	if applied || len(creates) == 0 && m.key == nil {
		return memberCommit{out: out, done: true}
	}
	ops := creates
	if m.key != nil {
		var delta int64
		if out.counted {
			delta = 1
		}
		dw := dedupeWrite{key: *m.key, fingerprint: m.fingerprint, windows: slices.Concat([]string{}, out.windows),
			applied: []AppliedIncrement{{Counter: m.counter, Delta: delta, Shard: out.shard}}}
		ops = append(ops, s.dedupeRecordOp(dw, m.writeID, m.now))
	}
	ops = append(ops, op{kind: opUpdate, ref: m.fence, updates: []firestore.Update{{Path: shared.FieldMembersEpoch, Value: m.epoch}}})
	if len(creates) > 0 {
		ops = append(ops, s.shardWriteOps(w)...)
	}
	return memberCommit{out: out, ops: ops}
}

// keyedMemberOutcome answers m from its key's record rec: what the first application of the key
// did, a duplicate unless it carries m.writeID (an attempt of this call applied).
func keyedMemberOutcome(rec *firestore.DocumentSnapshot, m memberWrite) memberCommit {
	data, err := decodeDedupeRecord(rec, *m.key)
	if err != nil {
		return memberCommit{err: err}
	}
	first, err := duplicateOutcome(data, *m.key, m.fingerprint)
	out := memberOutcome{shard: -1, duplicate: data.Write != m.writeID, windows: data.Windows, plannedAt: data.CreatedAt}
	if len(first.Applied) == 1 {
		out.counted, out.shard = first.Applied[0].Delta == 1, first.Applied[0].Shard
	}
	return memberCommit{out: out, done: true, err: err}
}

// memberFingerprint is the fingerprint of a keyed member increment: unlike any of increments', so a
// key sent with a delta, then with a member, is a reused key.
func memberFingerprint(id, member string) string {
	sum := sha256.Sum256([]byte("member\x00" + id + "\x00" + member))
	return hex.EncodeToString(sum[:])
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

// eitherTwin folds snaps, read as memberReads lists them, into one per member document followed by
// the rest: of each pair of twins the existing one (the first when both or neither exist).
func (m memberWrite) eitherTwin(snaps []*firestore.DocumentSnapshot) []*firestore.DocumentSnapshot {
	if m.legacy == nil {
		return snaps
	}
	n := len(m.refs)
	current, legacy, rest := snaps[:n], snaps[n:2*n], snaps[2*n:]
	for i, snap := range current {
		if !snap.Exists() && legacy[i].Exists() {
			current[i] = legacy[i]
		}
	}
	return slices.Concat(current, rest)
}

// memberGrace is how long a window's member documents outlive their bucket before Firestore's TTL
// policy on expires_at may delete them: past it the bucket no longer takes increments.
const memberGrace = 24 * time.Hour

// membersEpoch is the member epoch of counter document snap: its creation time and FieldMembersEpoch.
func membersEpoch(snap *firestore.DocumentSnapshot) string {
	epoch, _ := snap.Data()[shared.FieldMembersEpoch].(string)
	return epochOf(snap, epoch)
}

// epochOf is the member epoch of counter document snap once its FieldMembersEpoch is random.
func epochOf(snap *firestore.DocumentSnapshot, random string) string {
	return fmt.Sprintf("%d/%s", snap.CreateTime.UnixNano(), random)
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
