package counter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Source is where an idempotency key comes from. Keys are scoped by source, so a Pub/Sub message ID
// and an HTTP Idempotency-Key that happen to be equal never collide.
type Source string

// The sources of keyed increments.
const (
	// SourcePubSub keys are Pub/Sub message IDs, or the message's idempotency_key attribute.
	SourcePubSub Source = "pubsub"
	// SourceHTTP keys are Increment requests' Idempotency-Key headers.
	SourceHTTP Source = "http"
)

// Key identifies one keyed set of increments: it is applied at most once while its dedupe record lives.
type Key struct {
	// Source scopes ID.
	Source Source
	// ID is the key as the caller gave it; any string is allowed (it is hashed into a document ID).
	ID string
}

// recordID is the document ID of the key's dedupe record: a hash, so that any key is a valid
// document ID and record IDs spread evenly over Firestore's key space (no hot range).
func (k Key) recordID() string {
	sum := sha256.Sum256([]byte(string(k.Source) + "\x00" + k.ID))
	return hex.EncodeToString(sum[:])
}

// ErrKeyReused is returned when a key that was already applied comes back with different increments:
// the new increments are not applied.
var ErrKeyReused = errors.New("idempotency key already used with different increments")

// AppliedIncrement is one counter's share of a keyed write: the deltas of that counter, summed, and the
// shard they landed on.
type AppliedIncrement struct {
	// Counter is the counter ID.
	Counter string
	// Delta is the sum of the counter's deltas in the write.
	Delta int64
	// Shard is the shard that received Delta.
	Shard int
}

// Outcome is what ApplyOnce did.
type Outcome struct {
	// Applied lists each distinct counter with its summed delta and shard, in the order the counters
	// first appear in the increments. For a duplicate it is what the first application did.
	Applied []AppliedIncrement
	// Duplicate is true when the key had been applied before (by an earlier or a concurrent call), so
	// nothing was written this time.
	Duplicate bool
}

// ApplyOnce applies incs exactly once per key: one write-only transaction creates the key's dedupe
// record (expiring after Options.DedupeTTL, through Firestore's TTL policy) and increments one random shard of
// each distinct counter by the sum of its deltas. Counters that do not exist are created with the
// default shard count in the same transaction. Either everything is written or nothing is.
//
// When the key's record exists already, nothing is written and the Outcome is the first
// application's, with Duplicate set; if incs differ from the first application's, the error wraps
// ErrKeyReused. Other errors are Firestore's (see shared.IsRetryable).
func (s *Store) ApplyOnce(ctx context.Context, key Key, incs []shared.Increment) (Outcome, error) {
	if len(incs) == 0 || len(incs) > shared.MaxBatchIncrements {
		return Outcome{}, fmt.Errorf("apply key %s %q: %d increments, want 1 to %d", key.Source, key.ID, len(incs), shared.MaxBatchIncrements)
	}
	fingerprint, err := fingerprintOf(incs)
	if err != nil {
		return Outcome{}, err
	}
	recordRef := s.schema.DedupeRef(s.client, key.recordID())
	merged := mergeByCounter(incs)
	// Each retry follows an AlreadyExists of a counter this call meant to create, so it knows one more
	// existing counter: len(merged) retries are enough.
	for attempt := 0; ; attempt++ {
		outcome, created, err := s.applyKeyed(ctx, recordRef, key, fingerprint, merged)
		if err == nil {
			for _, id := range created {
				s.shardCounts.put(id, s.defaultNumShards)
			}
			return outcome, nil
		}
		if status.Code(err) != codes.AlreadyExists {
			return Outcome{}, fmt.Errorf("apply key %s %q: %w", key.Source, key.ID, err)
		}
		// Either the dedupe record exists (the key was applied, maybe a moment ago by a concurrent
		// delivery) or another request created one of the counters this call meant to create.
		snap, err := recordRef.Get(ctx)
		switch {
		case err == nil:
			return duplicateOutcome(snap, key, fingerprint)
		case status.Code(err) != codes.NotFound:
			return Outcome{}, fmt.Errorf("apply key %s %q: read its dedupe record: %w", key.Source, key.ID, err)
		case len(created) == 0 || attempt >= len(merged):
			return Outcome{}, fmt.Errorf("apply key %s %q: a document already exists, but not its dedupe record", key.Source, key.ID)
		}
	}
}

// applyKeyed runs the transaction of ApplyOnce once. created lists the counters it created.
func (s *Store) applyKeyed(ctx context.Context, recordRef *firestore.DocumentRef, key Key, fingerprint string,
	merged []shared.Increment) (outcome Outcome, created []string, err error) {
	applied := make([]AppliedIncrement, len(merged))
	stamps := make(map[string]int64) // touched minutes due on existing counters
	for i, inc := range merged {
		numShards, err := s.numShards(ctx, inc.Counter)
		if errors.Is(err, ErrNotFound) {
			numShards = s.defaultNumShards
			created = append(created, inc.Counter)
		} else if err != nil {
			return Outcome{}, nil, err
		} else if minute, due := s.touches.due(inc.Counter); due {
			stamps[inc.Counter] = minute
		}
		applied[i] = AppliedIncrement{Counter: inc.Counter, Delta: inc.Delta, Shard: s.pickShard(numShards)}
	}
	err = s.client.RunTransaction(ctx, func(_ context.Context, tx *firestore.Transaction) error {
		if err := tx.Create(recordRef, dedupeRecord(key, fingerprint, applied, time.Now().Add(s.dedupeTTL))); err != nil {
			return err
		}
		for _, id := range created {
			if err := tx.Create(s.schema.CounterRef(s.client, id), s.newCounterFields()); err != nil {
				return err
			}
		}
		for id, minute := range stamps {
			if err := tx.Set(s.schema.CounterRef(s.client, id), touchFields(minute), firestore.MergeAll); err != nil {
				return err
			}
		}
		for _, a := range applied {
			if err := tx.Set(s.schema.ShardRef(s.client, a.Counter, a.Shard), shardIncrement(a.Delta), firestore.MergeAll); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for id, minute := range stamps {
			s.touches.forget(id, minute)
		}
	}
	return Outcome{Applied: applied}, created, err
}

// dedupeRecord is the document that marks key as applied: what a retry must answer, how to recognise
// a key reused for other increments, and when Firestore's TTL policy may delete it.
func dedupeRecord(key Key, fingerprint string, applied []AppliedIncrement, expiresAt time.Time) map[string]any {
	entries := make([]map[string]any, len(applied))
	for i, a := range applied {
		entries[i] = map[string]any{
			shared.FieldAppliedCounter: a.Counter,
			shared.FieldAppliedDelta:   a.Delta,
			shared.FieldAppliedShard:   a.Shard,
		}
	}
	return map[string]any{
		shared.FieldDedupeSource:      string(key.Source),
		shared.FieldDedupeKey:         key.ID,
		shared.FieldDedupeFingerprint: fingerprint,
		shared.FieldDedupeApplied:     entries,
		shared.FieldCreatedAt:         firestore.ServerTimestamp,
		shared.FieldExpiresAt:         expiresAt,
	}
}

// dedupeRecordData is a dedupe record as read back.
type dedupeRecordData struct {
	Fingerprint string `firestore:"fingerprint"`
	Applied     []struct {
		Counter string `firestore:"counter"`
		Delta   int64  `firestore:"delta"`
		Shard   int    `firestore:"shard"`
	} `firestore:"applied"`
}

// duplicateOutcome is the Outcome of a key whose dedupe record exists: what the first application did.
func duplicateOutcome(snap *firestore.DocumentSnapshot, key Key, fingerprint string) (Outcome, error) {
	var rec dedupeRecordData
	if err := snap.DataTo(&rec); err != nil {
		return Outcome{}, fmt.Errorf("apply key %s %q: decode its dedupe record: %w", key.Source, key.ID, err)
	}
	outcome := Outcome{Duplicate: true, Applied: make([]AppliedIncrement, len(rec.Applied))}
	for i, a := range rec.Applied {
		outcome.Applied[i] = AppliedIncrement{Counter: a.Counter, Delta: a.Delta, Shard: a.Shard}
	}
	if rec.Fingerprint != fingerprint {
		return outcome, fmt.Errorf("apply key %s %q: %w", key.Source, key.ID, ErrKeyReused)
	}
	return outcome, nil
}

// mergeByCounter sums the deltas of each counter, in the order counters first appear, so a batch
// writes each counter's shard once.
func mergeByCounter(incs []shared.Increment) []shared.Increment {
	index := make(map[string]int, len(incs))
	var merged []shared.Increment
	for _, inc := range incs {
		if i, ok := index[inc.Counter]; ok {
			merged[i].Delta += inc.Delta
			continue
		}
		index[inc.Counter] = len(merged)
		merged = append(merged, inc)
	}
	return merged
}

// fingerprintOf is a hash of incs, in order: a key sent again with the same increments is a retry;
// with other increments it is a reused key.
func fingerprintOf(incs []shared.Increment) (string, error) {
	b, err := json.Marshal(incs)
	if err != nil {
		return "", fmt.Errorf("fingerprint increments: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
