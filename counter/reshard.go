package counter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// errShapeUnchanged ends a reshape with nothing to do; callers never see it.
var errShapeUnchanged = errors.New("shape unchanged")

// reshapeResult is what a reshape found and left.
type reshapeResult struct {
	before, after Shape
	// windows and distinct are the counter's, as left.
	windows  []string
	distinct bool
	group    string
	existed  bool
	changed  bool
}

// reshape sets counter id's shape to change(current, existed) (errShapeUnchanged: none) and its
// fields features, in one transaction keeping the value; a shrink folds the shards it drops.
// declaredFeatures reports whether features change what a collection counter's declaration owns
// (windows, distinct, group) rather than its declaration's own base (the source).
func declaredFeatures(features map[string]any) bool {
	if _, base := features[shared.FieldSource]; base {
		return false
	}
	for _, f := range []string{shared.FieldWindows, shared.FieldDistinct, shared.FieldGroup} {
		if _, ok := features[f]; ok {
			return true
		}
	}
	return false
}

func (s *Lifecycle) reshape(ctx context.Context, id string, change func(cur Shape, existed bool) (Shape, error), features map[string]any) (reshapeResult, error) {
	counterRef := s.schema.CounterRef(s.client, id)
	var res reshapeResult
	err := s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		res = reshapeResult{existed: true}
		snap, err := tx.Get(counterRef)
		switch {
		case status.Code(err) == codes.NotFound:
			res.existed = false
		case err != nil:
			return err
		default:
			if res.before, err = s.shapeOf(snap); err != nil {
				return err
			}
			res.windows = windowsOf(snap.Data())
			res.distinct = snap.Data()[shared.FieldDistinct] == true
			res.group = GroupOf(snap)
			if _, declared := snap.Data()[shared.FieldSource]; declared && declaredFeatures(features) {
				return ErrDeclared
			}
		}
		if res.after, err = change(res.before, res.existed); err != nil {
			return err
		}
		var shards []*firestore.DocumentSnapshot
		if res.existed && res.after.NumShards < res.before.NumShards {
			if shards, err = tx.Documents(s.schema.ShardsRef(s.client, id)).GetAll(); err != nil {
				return err
			}
		}
		// Reads done; writes follow.
		fields := res.after.fields()
		if len(shards) > 0 && snap.Data()[shared.FieldSource] != nil {
			fields[shared.FieldSumWide] = true // a fold can put more on a shard than a sum's bound
		}
		for f, v := range features {
			fields[f] = v
		}
		if ws, ok := features[shared.FieldWindows]; ok {
			res.windows = ws.([]string)
		}
		if d, ok := features[shared.FieldDistinct]; ok {
			res.distinct = d.(bool)
		}
		if g, ok := features[shared.FieldGroup]; ok {
			res.group, _ = g.(string) // firestore.Delete: none
		}
		if res.existed {
			err = tx.Set(counterRef, fields, firestore.MergeAll)
		} else {
			maps.DeleteFunc(fields, func(_ string, v any) bool { return v == firestore.Delete })
			fields[shared.FieldMemberCollection] = shared.MembersCollection
			err = tx.Create(counterRef, fields)
		}
		if err != nil {
			return err
		}
		return s.fold(tx, id, shards, res.after.NumShards)
	})
	if errors.Is(err, errShapeUnchanged) {
		return res, nil
	}
	if err != nil {
		return reshapeResult{}, err
	}
	res.changed = true
	s.configs.forget(id)
	return res, nil
}

// createZeroShards creates counter id's missing shards among from..to-1 at 0.
func (s *Lifecycle) createZeroShards(ctx context.Context, id string, from, to int) error {
	if from >= to {
		return nil
	}
	bulk := s.client.BulkWriter(ctx)
	jobs := make([]*firestore.BulkWriterJob, 0, to-from)
	for n := from; n < to; n++ {
		job, err := bulk.Set(s.schema.ShardRef(s.client, id, n), zeroShard(), firestore.MergeAll)
		if err != nil {
			bulk.End()
			return fmt.Errorf("create zeroed shards of counter %q: %w", id, err)
		}
		jobs = append(jobs, job)
	}
	bulk.End()
	for _, job := range jobs {
		if _, err := job.Results(); err != nil {
			return fmt.Errorf("create zeroed shards of counter %q: %w", id, err)
		}
	}
	return nil
}

// fold moves every shard outside 0..numShards-1 onto shard index mod numShards, within tx.
func (s *Lifecycle) fold(tx *firestore.Transaction, id string, shards []*firestore.DocumentSnapshot, numShards int) error {
	type moved struct {
		count, writes int64
		buckets       map[string]map[string]int64
	}
	into := make(map[int]*moved)
	for _, shard := range shards {
		if kept(shard.Ref.ID, numShards) {
			continue
		}
		n, err := strconv.Atoi(shard.Ref.ID)
		count, okCount := int64Field(shard, shared.FieldCount)
		writes, okWrites := int64Field(shard, shared.FieldWrites)
		buckets, okBuckets := bucketsOf(shard)
		if !okCount || !okWrites || !okBuckets {
			return fmt.Errorf("fold shard %s of counter %q: count, writes and buckets must be integers, got %v", shard.Ref.ID, id, shard.Data())
		}
		target := 0
		if err == nil && n > 0 {
			target = n % numShards
		}
		m := into[target]
		if m == nil {
			m = &moved{buckets: make(map[string]map[string]int64)}
			into[target] = m
		}
		m.count += count
		m.writes += writes
		for w, labels := range buckets {
			if m.buckets[w] == nil {
				m.buckets[w] = make(map[string]int64)
			}
			for label, c := range labels {
				m.buckets[w][label] += c
			}
		}
		if err := tx.Delete(shard.Ref); err != nil {
			return err
		}
	}
	for target, m := range into {
		data := map[string]any{shared.FieldCount: firestore.Increment(m.count), shared.FieldWrites: firestore.Increment(m.writes)}
		if len(m.buckets) > 0 {
			buckets := make(map[string]any, len(m.buckets))
			for w, labels := range m.buckets {
				inc := make(map[string]any, len(labels))
				for label, c := range labels {
					inc[label] = firestore.Increment(c)
				}
				buckets[w] = inc
			}
			data[shared.FieldBuckets] = buckets
		}
		if err := tx.Set(s.schema.ShardRef(s.client, id, target), data, firestore.MergeAll); err != nil {
			return err
		}
	}
	return nil
}

// bucketsOf reads a shard's buckets; false when one is not an integer.
func bucketsOf(snap *firestore.DocumentSnapshot) (map[string]map[string]int64, bool) {
	raw, ok := snap.Data()[shared.FieldBuckets]
	if !ok {
		return nil, true
	}
	windows, ok := raw.(map[string]any)
	if !ok {
		return nil, false
	}
	out := make(map[string]map[string]int64, len(windows))
	for w, labels := range windows {
		lm, ok := labels.(map[string]any)
		if !ok {
			return nil, false
		}
		out[w] = make(map[string]int64, len(lm))
		for label, v := range lm {
			if out[w][label], ok = v.(int64); !ok {
				return nil, false
			}
		}
	}
	return out, true
}

// kept reports whether shardID is among 0..numShards-1.
func kept(shardID string, numShards int) bool {
	n, err := strconv.Atoi(shardID)
	return err == nil && n >= 0 && n < numShards && strconv.Itoa(n) == shardID
}

// int64Field reads an integer field of a shard; absent is 0.
func int64Field(snap *firestore.DocumentSnapshot, field string) (int64, bool) {
	v, ok := snap.Data()[field]
	if !ok {
		return 0, true
	}
	n, ok := v.(int64)
	return n, ok
}

// zeroShard creates a shard at 0, leaving an existing one.
func zeroShard() map[string]any {
	return map[string]any{shared.FieldCount: firestore.Increment(0), shared.FieldWrites: firestore.Increment(0)}
}

// Adapt changes counter id's shard count from `from` to `to`, clamped to its bounds, creating no
// shards; false when the count is no longer `from`, the counter is pinned or gone, or nothing
// changes. Adapt(id, n, n) folds stray shards outside 0..n-1 and reports whether there were any.
func (s *Lifecycle) Adapt(ctx context.Context, id string, from, to int) (changed bool, err error) {
	if from == to {
		changed, err := s.foldStrays(ctx, id, from)
		if err != nil {
			return false, fmt.Errorf("fold stray shards of counter %q into %d: %w", id, from, err)
		}
		return changed, nil
	}
	res, err := s.reshape(ctx, id, func(cur Shape, existed bool) (Shape, error) {
		n := cur.Clamp(to)
		if !existed || cur.NumShards != from || n == from {
			return Shape{}, errShapeUnchanged
		}
		cur.NumShards = n
		return cur, nil
	}, nil)
	if err != nil {
		return false, fmt.Errorf("adapt counter %q from %d to %d shards: %w", id, from, to, err)
	}
	return res.changed, nil
}

// foldStrays folds counter id's shards outside 0..numShards-1 if its count is still numShards,
// reporting whether there were any.
func (s *Lifecycle) foldStrays(ctx context.Context, id string, numShards int) (folded bool, _ error) {
	err := s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		folded = false
		snap, err := tx.Get(s.schema.CounterRef(s.client, id))
		if status.Code(err) == codes.NotFound {
			return nil
		} else if err != nil {
			return err
		}
		if shape, err := s.shapeOf(snap); err != nil || shape.NumShards != numShards {
			return err
		}
		shards, err := tx.Documents(s.schema.ShardsRef(s.client, id)).GetAll()
		if err != nil {
			return err
		}
		for _, shard := range shards {
			folded = folded || !kept(shard.Ref.ID, numShards)
		}
		if !folded {
			return nil
		}
		return s.fold(tx, id, shards, numShards)
	})
	return folded, err
}
