package counter

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// writeRecordPrefix starts every write ID, so a write record's document ID never equals a dedupe
// record's (a hex hash).
const writeRecordPrefix = "write-"

// commitPlan is the content of one atomic commit.
type commitPlan struct {
	// writeID marks every document the commit creates, so an attempt that applied can be recognised.
	writeID string
	// writeRecord: the commit creates the write record writeID, because it holds an unkeyed request.
	writeRecord bool
	// now is the plan's time (recordNow): its records' created_at, and the time whose buckets count
	// the increments of requests without a time of their own.
	now     time.Time
	shards  []shardWrite
	dedupes []dedupeWrite
	// dedupeOf maps a keyed request's index in its batch to its dedupe record's index in dedupes.
	dedupeOf map[int]int
}

// shardWrite is one counter's part of a commit.
type shardWrite struct {
	counter string
	delta   int64
	shard   int
	// windows are the counter's windows: the write also adds each of parts to their buckets holding
	// its time. A distinct member's write has delta 1 when the member is new to
	// the counter, else 0, one part of 1, and the windows in whose bucket it is new.
	windows []string
	parts   []timedDelta
	// create makes the counter (absent when planned) with the default shard count in the same commit.
	create bool
	// stamp sets the counter's touched_minute to minute in the same commit; it fails when the counter
	// document is missing.
	stamp  bool
	minute int64
	// shardMustExist makes the shard write fail when the shard document is missing (RequireExisting):
	// Delete removes every shard with the counter, so the write cannot bring a deleted counter back.
	shardMustExist bool
}

// dedupeWrite is one dedupe record of a commit.
type dedupeWrite struct {
	key         Key
	fingerprint string
	applied     []AppliedIncrement
	// windows, for a keyed member increment: the windows in whose bucket it counted the member.
	windows []string
}

// ErrDeltaOverflow refuses, before anything is written, increments of one counter whose deltas in
// one write would sum past int64.
var ErrDeltaOverflow = errors.New("the sum of the deltas of one write overflows int64")

// addDeltas is a+b, and false when that overflows int64.
func addDeltas(a, b int64) (int64, bool) {
	sum := a + b
	return sum, (sum > a) == (b > 0)
}

// newWriteID is a fresh write ID: 128 random bits.
func newWriteID() string { return writeRecordPrefix + rand.Text() }

// plan makes the commit of the live requests of batch: one shard write per counter with the sum of its
// deltas, and one dedupe record per keyed request; ErrDeltaOverflow when a sum overflows int64.
// verify follows a commit refused for a missing document (see planShard).
func (s *Store) plan(ctx context.Context, batch []request, live []int, verify bool) (*commitPlan, error) {
	plan := &commitPlan{writeID: newWriteID(), now: recordNow(s.clock), dedupeOf: make(map[int]int)}
	index := make(map[string]int)
	for _, i := range live {
		plan.writeRecord = plan.writeRecord || batch[i].key == nil
		for _, inc := range batch[i].incs {
			at := cmp.Or(batch[i].at, plan.now)
			if n, ok := index[inc.Counter]; ok {
				if err := plan.shards[n].add(inc.Delta, at); err != nil {
					return nil, fmt.Errorf("counter %q: %w", inc.Counter, err)
				}
				continue
			}
			w, err := s.planShard(ctx, inc.Counter, inc.Delta, at, verify, false)
			if err != nil {
				return nil, err
			}
			index[inc.Counter] = len(plan.shards)
			plan.shards = append(plan.shards, w)
		}
	}
	for _, i := range live {
		if req := batch[i]; req.key != nil {
			applied := make([]AppliedIncrement, len(req.incs))
			for n, inc := range req.incs {
				applied[n] = AppliedIncrement{Counter: inc.Counter, Delta: inc.Delta, Shard: plan.shards[index[inc.Counter]].shard}
			}
			plan.dedupeOf[i] = len(plan.dedupes)
			plan.dedupes = append(plan.dedupes, dedupeWrite{key: *req.key, fingerprint: req.fingerprint, applied: applied})
		}
	}
	return plan, nil
}

// planShard plans a write of delta to counter id at now (ErrMemberRequired for a distinct counter):
// the next shard of its cached (or read) shard count, the buckets of its windows that hold now (the
// increment's time), its
// creation when it does not exist, and its touched stamp when one is due.
//
// With RequireExisting, a missing counter is ErrNotFound instead, and the shard must exist, unless
// verify (a previous commit found a document missing): then the stamp, which fails on a deleted
// counter, guards the shard's creation in the same commit.
func (s *Store) planShard(ctx context.Context, id string, delta int64, now time.Time, verify, change bool) (shardWrite, error) {
	cfg, err := s.writeConfig(ctx, id)
	create := errors.Is(err, ErrNotFound)
	switch {
	case create && change:
		return shardWrite{}, errNoBase
	case err == nil && cfg.source != change:
		if change {
			return shardWrite{}, errNoBase
		}
		return shardWrite{}, fmt.Errorf("counter %q: %w", id, ErrSourceCounter)
	case create && s.requireExisting:
		return shardWrite{}, fmt.Errorf("counter %q: %w", id, ErrNotFound)
	case create:
		cfg = writeConfig{numShards: s.defaultNumShards}
	case err != nil:
		return shardWrite{}, err
	case cfg.distinct:
		return shardWrite{}, fmt.Errorf("counter %q: %w", id, ErrMemberRequired)
	}
	minute, due := s.touches.due(id)
	w := shardWrite{counter: id, delta: delta, shard: s.pickShard(id, cfg.numShards), windows: cfg.windows,
		parts:  []timedDelta{{at: now, delta: delta}},
		create: create, stamp: !create && due, minute: minute}
	if s.requireExisting {
		w.stamp = w.stamp || verify
		w.shardMustExist = !w.stamp
	}
	return w, nil
}

// timedDelta is a part of a shard write's delta that counts in the buckets holding at.
type timedDelta struct {
	at    time.Time
	delta int64
}

// add merges another increment of w's counter, of delta at time at, into w: a part of its own when
// its buckets differ from every part's; ErrDeltaOverflow when a sum overflows int64.
func (w *shardWrite) add(delta int64, at time.Time) error {
	sum, ok := addDeltas(w.delta, delta)
	if !ok {
		return ErrDeltaOverflow
	}
	for i, p := range w.parts {
		if sameBuckets(w.windows, p.at, at) {
			if w.parts[i].delta, ok = addDeltas(p.delta, delta); !ok {
				return ErrDeltaOverflow
			}
			w.delta = sum
			return nil
		}
	}
	w.parts = append(w.parts, timedDelta{at: at, delta: delta})
	w.delta = sum
	return nil
}

// writeConfig returns what a write of counter id needs of its configuration, from the cache when it
// is fresh; ErrNotFound when the counter does not exist.
func (s *Store) writeConfig(ctx context.Context, id string) (writeConfig, error) {
	if cfg, ok := s.shardCounts.get(id); ok {
		return cfg, nil
	}
	snap, err := s.schema.CounterRef(s.client, id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return writeConfig{}, ErrNotFound
	}
	if err != nil {
		return writeConfig{}, fmt.Errorf("read counter %q: %w", id, err)
	}
	shape, err := s.ShapeOf(snap)
	if err != nil {
		return writeConfig{}, err
	}
	cfg := writeConfig{numShards: shape.NumShards, windows: windowsOf(snap.Data()), distinct: snap.Data()[shared.FieldDistinct] == true,
		membersEpoch: membersEpoch(snap), legacyMembers: snap.Data()[shared.FieldMemberCollection] != shared.MembersCollection,
		source: snap.Data()[shared.FieldSource] != nil}
	s.shardCounts.put(id, cfg)
	return cfg, nil
}

// remember updates what this Store knows once shard writes ws committed: counters they created
// exist, and counters they stamped need no stamp for a while.
func (s *Store) remember(ws []shardWrite) {
	for _, w := range ws {
		if w.create {
			s.shardCounts.put(w.counter, writeConfig{numShards: s.defaultNumShards})
		}
		if w.create || w.stamp {
			s.touches.record(w.counter, w.minute)
		}
	}
}
