package counter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shardcount/counters/shared"
)

// Source is where an idempotency key comes from; keys of different sources never collide.
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

// ErrKeyReused is returned when a key that was already applied comes back with different increments:
// the new increments are not applied.
var ErrKeyReused = errors.New("idempotency key already used with different increments")

// recordID is the document ID of the key's dedupe record: a SHA-256 of source, caller and ID, in a
// form where no key without a caller can name a caller's record.
func (k Key) recordID() string {
	material := string(k.Source) + "\x00" + k.ID
	if k.Caller != "" {
		material = fmt.Sprintf("%s\x01%d:%s\x00%s", k.Source, len(k.Caller), k.Caller, k.ID)
	}
	sum := sha256.Sum256([]byte(material))
	return hex.EncodeToString(sum[:])
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
