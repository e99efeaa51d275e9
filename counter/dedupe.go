package counter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
	// Caller scopes ID too: the verified identity of whoever sent the key (e.g. a Firebase user ID),
	// so one caller can neither consume nor replay another's key. Empty means nobody was verified
	// (public increments, Pub/Sub): the key is shared by everyone who can send it.
	Caller string
	// ID is the key as the caller gave it; any string is allowed (it is hashed into a document ID).
	ID string
}

// recordID is the document ID of the key's dedupe record: a hash, so that any key is a valid
// document ID and record IDs spread evenly over Firestore's key space (no hot range). A key without
// a caller hashes as it always did; a caller is length-prefixed behind another separator, so no
// public key's text can name a caller's record.
func (k Key) recordID() string {
	material := string(k.Source) + "\x00" + k.ID
	if k.Caller != "" {
		material = fmt.Sprintf("%s\x01%d:%s\x00%s", k.Source, len(k.Caller), k.Caller, k.ID)
	}
	sum := sha256.Sum256([]byte(material))
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

// ApplyOnce applies incs exactly once per key: one atomic commit creates the key's dedupe record
// (expiring after Options.DedupeTTL, through Firestore's TTL policy) and increments one random shard
// of each distinct counter by the sum of its deltas. Counters that do not exist are created with the
// default shard count in the same commit. Either everything is written or nothing is. With group
// commit on, the increments of a single-counter key share their commit (and shard write) with the
// other increments of that counter in this instance; a key over several counters is a commit of its
// own.
//
// When the key's record exists already, nothing is written and the Outcome is the first
// application's, with Duplicate set; if incs differ from the first application's, the error wraps
// ErrKeyReused. Any other error wraps ErrNotApplied or ErrOutcomeUnknown; a keyed increment whose
// outcome is unknown is safe to send again.
func (s *Store) ApplyOnce(ctx context.Context, key Key, incs []shared.Increment) (Outcome, error) {
	if len(incs) == 0 || len(incs) > shared.MaxBatchIncrements {
		return Outcome{}, fmt.Errorf("apply key %s %q: %d increments, want 1 to %d", key.Source, key.ID, len(incs), shared.MaxBatchIncrements)
	}
	fingerprint, err := fingerprintOf(incs)
	if err != nil {
		return Outcome{}, err
	}
	r := s.write(ctx, entry{incs: mergeByCounter(incs), key: &key, fingerprint: fingerprint})
	if r.err != nil && !errors.Is(r.err, ErrKeyReused) {
		return Outcome{}, fmt.Errorf("apply key %s %q: %w", key.Source, key.ID, r.err)
	}
	return r.outcome, r.err
}

// dedupeRecord is the document that marks a key as applied: what a retry must answer, how to
// recognise a key reused for other increments, the write that applied it, and when Firestore's TTL
// policy may delete it.
func dedupeRecord(k keyedWrite, writeID string, now, expiresAt time.Time) map[string]any {
	entries := make([]map[string]any, len(k.applied))
	for i, a := range k.applied {
		entries[i] = map[string]any{
			shared.FieldAppliedCounter: a.Counter,
			shared.FieldAppliedDelta:   a.Delta,
			shared.FieldAppliedShard:   a.Shard,
		}
	}
	rec := map[string]any{
		shared.FieldDedupeSource:      string(k.key.Source),
		shared.FieldDedupeKey:         k.key.ID,
		shared.FieldDedupeFingerprint: k.fingerprint,
		shared.FieldDedupeApplied:     entries,
		shared.FieldDedupeWrite:       writeID,
		shared.FieldCreatedAt:         now, // not a server timestamp: no field transform per record
		shared.FieldExpiresAt:         expiresAt,
	}
	if k.key.Caller != "" {
		rec[shared.FieldDedupeCaller] = k.key.Caller
	}
	return rec
}

// dedupeRecordData is a dedupe record as read back.
type dedupeRecordData struct {
	Fingerprint string `firestore:"fingerprint"`
	Write       string `firestore:"write"`
	Applied     []struct {
		Counter string `firestore:"counter"`
		Delta   int64  `firestore:"delta"`
		Shard   int    `firestore:"shard"`
	} `firestore:"applied"`
}

// duplicateOutcome is the Outcome of a key whose dedupe record exists: what the first application did.
func duplicateOutcome(rec dedupeRecordData, key Key, fingerprint string) (Outcome, error) {
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
