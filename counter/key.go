package counter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shardcount/counters/shared/wire"
)

// Source scopes idempotency keys.
type Source string

// The sources of keyed increments.
const (
	SourcePubSub Source = "pubsub" // message IDs or idempotency_key attributes
	SourceHTTP   Source = "http"   // Idempotency-Key headers
)

// Key identifies increments applied at most once while its dedupe record lives.
type Key struct {
	Source Source
	// Caller, the verified sender or "", scopes ID: no caller can use another's key.
	Caller string
	ID     string
}

// ErrKeyReused refuses a key already applied with different increments.
var ErrKeyReused = errors.New("idempotency key already used with different increments")

// recordID is the key's dedupe record ID, distinct per caller.
func (k Key) recordID() string {
	material := string(k.Source) + "\x00" + k.ID
	if k.Caller != "" {
		material = fmt.Sprintf("%s\x01%d:%s\x00%s", k.Source, len(k.Caller), k.Caller, k.ID)
	}
	sum := sha256.Sum256([]byte(material))
	return hex.EncodeToString(sum[:])
}

// fingerprintOf is a hash of incs, telling a retry from a reused key.
func fingerprintOf(incs []wire.Increment) (string, error) {
	b, err := json.Marshal(incs)
	if err != nil {
		return "", fmt.Errorf("fingerprint increments: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
