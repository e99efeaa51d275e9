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
	SourcePubSub Source = "pubsub" // message IDs or idempotency_key attributes
	SourceHTTP   Source = "http"   // Idempotency-Key headers
)

// Key identifies one keyed set of increments, applied at most once while its dedupe record lives.
type Key struct {
	Source Source
	// Caller, the verified sender ("" when none), scopes ID: no caller can use another's key.
	Caller string
	ID     string // any string
}

// ErrKeyReused refuses a key already applied with different increments; the new ones are not applied.
var ErrKeyReused = errors.New("idempotency key already used with different increments")

// recordID is the key's dedupe record ID; no key without a caller can name a caller's record.
func (k Key) recordID() string {
	material := string(k.Source) + "\x00" + k.ID
	if k.Caller != "" {
		material = fmt.Sprintf("%s\x01%d:%s\x00%s", k.Source, len(k.Caller), k.Caller, k.ID)
	}
	sum := sha256.Sum256([]byte(material))
	return hex.EncodeToString(sum[:])
}

// fingerprintOf is a hash of incs, in order: it tells a retry from a reused key.
func fingerprintOf(incs []shared.Increment) (string, error) {
	b, err := json.Marshal(incs)
	if err != nil {
		return "", fmt.Errorf("fingerprint increments: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
