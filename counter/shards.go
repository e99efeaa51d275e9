package counter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
	"github.com/shardcount/counters/shared/clock"
	"github.com/shardcount/counters/shared/wire"
)

// shards plans shard writes under each counter's cached configuration; every part of a Store
// shares one by pointer.
type shards struct {
	documents
	clock           clock.Clock
	configs         *configCache
	requireExisting bool
	pickShard       func(id string, numShards int) int
	touches         *touchStamps
}

// planShard plans a write of delta to counter id at now; ErrMemberRequired for a distinct counter.
// With RequireExisting: ErrNotFound, and the shard must exist unless verify, which stamps instead.
func (s *shards) planShard(ctx context.Context, id string, delta int64, now time.Time, verify, change bool) (shardWrite, error) {
	cfg, err := s.configOf(ctx, id)
	create := errors.Is(err, ErrNotFound)
	switch {
	case create && change:
		return shardWrite{}, ErrNoCollectionCounter
	case err == nil && cfg.source != change:
		if change {
			return shardWrite{}, ErrNoCollectionCounter
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

// configOf is counter id's cached write configuration; ErrNotFound.
func (s *shards) configOf(ctx context.Context, id string) (writeConfig, error) {
	if cfg, ok := s.configs.get(id); ok {
		return cfg, nil
	}
	snap, err := s.schema.CounterRef(s.client, id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return writeConfig{}, ErrNotFound
	}
	if err != nil {
		return writeConfig{}, fmt.Errorf("read counter %q: %w", id, err)
	}
	shape, err := s.shapeOf(snap)
	if err != nil {
		return writeConfig{}, err
	}
	cfg := writeConfig{numShards: shape.NumShards, windows: windowsOf(snap.Data()), distinct: snap.Data()[shared.FieldDistinct] == true,
		membersEpoch: membersEpoch(snap), legacyMembers: snap.Data()[shared.FieldMemberCollection] != shared.MembersCollection,
		source: snap.Data()[shared.FieldSource] != nil}
	s.configs.put(id, cfg)
	return cfg, nil
}

// remember caches what committed writes ws created and stamped.
func (s *shards) remember(ws []shardWrite) {
	for _, w := range ws {
		if w.create {
			s.configs.put(w.counter, writeConfig{numShards: s.defaultNumShards})
		}
		if w.create || w.stamp {
			s.touches.record(w.counter, w.minute)
		}
	}
}

// shapeOf reads a counter document's shape, with Settings' defaults for missing fields; a field out
// of range or not an integer is ErrUncountable.
func (s *shards) shapeOf(snap *firestore.DocumentSnapshot) (Shape, error) {
	data := snap.Data()
	numShards, err := shardCountField(snap.Ref.ID, data, shared.FieldNumShards, s.defaultNumShards)
	if err != nil {
		return Shape{}, err
	}
	lo, err := shardCountField(snap.Ref.ID, data, shared.FieldMinShards, min(s.defaultNumShards, numShards))
	if err != nil {
		return Shape{}, err
	}
	hi, err := shardCountField(snap.Ref.ID, data, shared.FieldMaxShards, wire.MaxNumShards)
	if err != nil {
		return Shape{}, err
	}
	if lo > hi {
		return Shape{}, fmt.Errorf("%w: counter %q: %s %d exceeds %s %d", ErrUncountable, snap.Ref.ID, shared.FieldMinShards, lo, shared.FieldMaxShards, hi)
	}
	return Shape{NumShards: numShards, MinShards: lo, MaxShards: hi}, nil
}
