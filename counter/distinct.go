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

	"github.com/shardcount/counters/gate"
	"github.com/shardcount/counters/shared"
)

// ErrMemberRequired refuses a plain increment of a distinct counter.
var ErrMemberRequired = errors.New("the counter counts distinct members: send a member, or configure the counter")

// ErrNotDistinct refuses a member increment of a counter that is not distinct.
var ErrNotDistinct = errors.New("the counter does not count distinct members")

// Members counts distinct members (through Increments.Increment), and purges and moves their
// documents.
type Members struct {
	*shards
	fences *fences
	life   *gate.Gate // Increments' own
}

// memberOutcome is what a member increment did.
type memberOutcome struct {
	counted   bool     // new all time
	shard     int      // -1 when nothing was written
	windows   []string // where the member was new
	duplicate bool
	plannedAt time.Time
}

// result is out as Increment's Result for counter id.
func (out memberOutcome) result(id string) Result {
	var delta int64
	if out.shard >= 0 {
		delta = 1
	}
	return Result{Applied: []AppliedIncrement{{Counter: id, Delta: delta, Shard: out.shard}}, Counted: out.counted,
		Duplicate: out.duplicate, Windows: out.windows, PlannedAt: out.plannedAt}
}

// incrementDistinct counts r.Member once per member epoch in r.Counter, all time and per window
// bucket, however often sent; ErrNotFound for a missing counter. See docs/design.md, "Distinct members".
func (s *Members) incrementDistinct(ctx context.Context, r Request) (Result, error) {
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

// countMember counts member in counter id, planning again while a fence is down.
func (s *Members) countMember(ctx context.Context, id, member string, key *Key) (memberOutcome, error) {
	call := memberCall{counter: id, member: member, key: key, now: recordNow(s.clock), writeID: newWriteID()}
	if key != nil {
		call.fingerprint = memberFingerprint(id, member)
	}
	for plans := 1; ; plans++ {
		cfg, err := s.configOf(ctx, id)
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
		// Nothing of m applied; only an unraised fence needs fences.raise.
		s.configs.forget(id)
		if plans == maxMemberPlans {
			return failMember(id, notApplied, fmt.Errorf("gave up after %d plans: %w", plans, err))
		}
		if fresh, err := s.configOf(ctx, id); err != nil || fresh.membersEpoch != m.epoch {
			continue // stale cache or error: plan again
		}
		if err := s.fences.raise(ctx, id, m.epoch); err != nil && !errors.Is(err, errEpochMoved) {
			return failMember(id, notApplied, err)
		}
	}
}

// maxMemberPlans bounds countMember's plans.
const maxMemberPlans = 4

// errFenceDown: the plan's shard fence is missing (epoch over, counter deleted, or not yet raised).
var errFenceDown = errors.New("the member epoch's fence is down")

// errEpochMoved: fences.raise found another epoch or a counter not distinct.
var errEpochMoved = errors.New("the member epoch moved")

// failMember wraps err for counter id with wrap.
func failMember(id string, wrap func(error) error, err error) (memberOutcome, error) {
	return memberOutcome{}, wrap(fmt.Errorf("count member of %q: %w", id, err))
}

// memberCall is one member increment, fixed across plans and attempts.
type memberCall struct {
	counter, member string
	key             *Key
	fingerprint     string
	now             time.Time // picks the buckets
	writeID         string    // on every document a commit creates
}

// memberWrite is one plan of a memberCall.
type memberWrite struct {
	memberCall
	refs []*firestore.DocumentRef
	// legacy: nil, or refs' twins in shared.LegacyMembersCollection (either counts).
	legacy  []*firestore.DocumentRef
	windows []string
	epoch   string
	fence   *firestore.DocumentRef // the shard's fence in epoch
	shard   shardWrite             // without the member's deltas
}

// planMember plans call under cfg.
func (s *Members) planMember(call memberCall, cfg writeConfig) memberWrite {
	id := call.counter
	minute, due := s.touches.due(id)
	shard := s.pickShard(id, cfg.numShards)
	member := cfg.membersEpoch + "\x00" + call.member
	m := memberWrite{
		memberCall: call,
		refs:       s.memberRefs(id, shared.MembersCollection, member, cfg.windows, call.now),
		windows:    cfg.windows,
		epoch:      cfg.membersEpoch,
		fence:      s.fences.ref(id, cfg.membersEpoch, shard),
		shard:      shardWrite{counter: id, shard: shard, parts: []timedDelta{{at: call.now, delta: 1}}, stamp: due, minute: minute},
	}
	if cfg.legacyMembers {
		m.legacy = s.memberRefs(id, shared.LegacyMembersCollection, member, cfg.windows, call.now)
	}
	return m
}

// memberReads are refs, legacy, fence, then the key's record.
func (s *Members) memberReads(m memberWrite) []*firestore.DocumentRef {
	refs := slices.Concat(m.refs, m.legacy, []*firestore.DocumentRef{m.fence})
	if m.key != nil {
		refs = append(refs, s.dedupeRecordRef(*m.key))
	}
	return refs
}

// extraMemberAttempts is commitMember's margin.
const extraMemberAttempts = 3

// commitMember creates m's missing documents until a commit applies or none are missing. Errors wrap
// ErrNotApplied only when nothing of m applied or will (errFenceDown included), else ErrOutcomeUnknown.
func (s *Members) commitMember(ctx context.Context, m memberWrite) (memberOutcome, error) {
	var unknown error  // why a commit of m may have applied
	var noAnswer error // the first unanswered commit
	refused := false   // the last commit failed AlreadyExists
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
			// Another commit created what every earlier commit of m meant to: none applies.
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
			refused = true // by another commit or a resend of this one
		case code == codes.Aborted || code == codes.NotFound:
		case noAnswer != nil:
			return failMember(m.counter, outcomeUnknown, fmt.Errorf("%w; sending it again failed: %w", noAnswer, err))
		default:
			noAnswer = err
		}
		unknown = err
	}
	// The last may have been refused by its own earlier try.
	return failMember(m.counter, outcomeUnknown, fmt.Errorf("gave up after %d attempts: %w", attempts, unknown))
}

// memberCommit is one attempt of a memberWrite.
type memberCommit struct {
	out       memberOutcome
	done      bool // out is final
	fenceDown bool
	ops       []op
	// err: an unreadable key record, or ErrKeyReused (out is the first application).
	err error
}

// planCommit is m's commit given snaps (memberReads, twins folded); documents carrying m.writeID
// mean an earlier commit of m applied.
func (s *Members) planCommit(m memberWrite, snaps []*firestore.DocumentSnapshot) memberCommit {
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

// keyedMemberOutcome answers m from its key's record rec.
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

// memberFingerprint is unlike any delta increment's fingerprint.
func memberFingerprint(id, member string) string {
	sum := sha256.Sum256([]byte("member\x00" + id + "\x00" + member))
	return hex.EncodeToString(sum[:])
}

// readMembers reads refs; when settling, within resolveTimeout.
func (s *Members) readMembers(ctx context.Context, refs []*firestore.DocumentRef, settling bool) ([]*firestore.DocumentSnapshot, error) {
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

// eitherTwin folds each twin pair in snaps to the existing one.
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

// memberGrace is how long window member documents outlive their bucket.
const memberGrace = 24 * time.Hour

// membersEpoch is counter document snap's member epoch.
func membersEpoch(snap *firestore.DocumentSnapshot) string {
	epoch, _ := snap.Data()[shared.FieldMembersEpoch].(string)
	return epochOf(snap, epoch)
}

// epochOf is snap's member epoch once its FieldMembersEpoch is random.
func epochOf(snap *firestore.DocumentSnapshot, random string) string {
	return fmt.Sprintf("%d/%s", snap.CreateTime.UnixNano(), random)
}

// memberRefs are member's documents: all time, then now's bucket per window.
func (s *Members) memberRefs(id, collection, member string, windows []string, now time.Time) []*firestore.DocumentRef {
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
