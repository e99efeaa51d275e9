// Package config declares the settings as tagged fields of Config (docs/settings.md).
//
// Not a supported import: see package counters.
package config

import (
	"regexp"
	"strings"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/shared"
)

// Config is the functions' configuration, read once from the environment.
//
// Tags: env, min/max (a number or namedBounds name), check (a stringChecks rule), usedBy, option.
type Config struct {
	// Project is the Google Cloud project; empty: from the credentials.
	Project string `env:"GOOGLE_CLOUD_PROJECT" usedBy:"*" option:"project"`
	// Database is the Firestore database ID.
	Database string `env:"FIRESTORE_DATABASE, default=(default)" usedBy:"*" option:"database"`
	// CountersCollection is the collection of counter documents.
	CountersCollection string `env:"COUNTERS_COLLECTION, default=counters" check:"collection" usedBy:"Increment,Count,ConfigureCounter,IncrementFromPubSub,RollupOnShardWrite,RollupScheduled,CountDocumentWrite"`
	// RollupsCollection is the collection of the roll-ups apps read.
	RollupsCollection string `env:"ROLLUPS_COLLECTION, default=rollups" check:"collection" usedBy:"Count,ConfigureCounter,RollupOnShardWrite,RollupScheduled"`
	// TopsCollection is the collection of the top lists apps read.
	TopsCollection string `env:"TOPS_COLLECTION, default=tops" check:"collection" usedBy:"Top,ConfigureCounter,RollupOnShardWrite,RollupScheduled"`
	// DedupeCollection is the collection of keyed increments' dedupe records.
	DedupeCollection string `env:"DEDUPE_COLLECTION, default=counter_dedupe" check:"counterCollection" usedBy:"Increment,IncrementFromPubSub,RollupScheduled"`
	// DefaultNumShards is a new counter's shard count and the least the roll-up adapts to.
	DefaultNumShards int `env:"DEFAULT_NUM_SHARDS, default=10" min:"MinNumShards" max:"MaxNumShards" usedBy:"Increment,Count,ConfigureCounter,IncrementFromPubSub,RollupOnShardWrite,RollupScheduled,CountDocumentWrite"`
	// CounterIDPattern, when set, is an RE2 expression counter IDs must match whole (else 400).
	CounterIDPattern string `env:"COUNTER_ID_PATTERN" check:"counterIDPattern" usedBy:"Increment,Count,ConfigureCounter,IncrementFromPubSub,CountDocumentWrite"`
	// CreateOnIncrement lets an increment create an unknown counter (else 404).
	CreateOnIncrement bool `env:"CREATE_ON_INCREMENT, default=true" usedBy:"Increment,Count,Top,ConfigureCounter,IncrementFromPubSub,RollupScheduled,CountDocumentWrite"`
	// MaxDelta bounds the magnitude of one increment.
	MaxDelta int64 `env:"MAX_DELTA, default=1000000" min:"1" max:"MaxDeltaLimit" usedBy:"Increment,IncrementFromPubSub"`
	// ShardCountCacheTTL is how long an instance trusts a cached shard count.
	ShardCountCacheTTL time.Duration `env:"SHARD_COUNT_CACHE_TTL, default=5s" min:"0s" usedBy:"Increment,IncrementFromPubSub,RollupScheduled,CountDocumentWrite"`
	// LogLevel is the minimum severity logged.
	LogLevel string `env:"LOG_LEVEL, default=INFO" check:"logLevel" usedBy:"*"`
	// RequestTimeout bounds one request's database work (then 503).
	RequestTimeout time.Duration `env:"REQUEST_TIMEOUT, default=10s" min:"1ms" usedBy:"Increment,Count,Top,ConfigureCounter,IncrementFromPubSub"`
	// RollupInterval is the least time between writes of one counter's roll-up.
	RollupInterval time.Duration `env:"ROLLUP_INTERVAL, default=1s" min:"100ms" usedBy:"ConfigureCounter,RollupOnShardWrite,RollupScheduled"`
	// HourBucketsKept is how long hourly buckets are kept.
	HourBucketsKept time.Duration `env:"HOUR_BUCKETS_KEPT, default=2160h" min:"24h" usedBy:"RollupOnShardWrite,RollupScheduled"`
	// ExtensionFoldInterval is the least time between folds of one extension counter.
	ExtensionFoldInterval time.Duration `env:"EXTENSION_FOLD_INTERVAL, default=1s" min:"100ms" usedBy:"FoldExtensionShards"`
	// ExtensionFolds lists what FoldExtensionShards folds (docs/migrate-from-firestore-counter.md).
	ExtensionFolds string `env:"EXTENSION_FOLDS" check:"extensionFolds" usedBy:"FoldExtensionShards"`
	// RollupSweepLookback is how far back the scheduled roll-up looks for writes.
	RollupSweepLookback time.Duration `env:"ROLLUP_SWEEP_LOOKBACK, default=10m" min:"2m" usedBy:"RollupScheduled"`
	// GroupCommitInterval is the least time between shard writes of one counter by an instance; 0
	// writes each increment.
	GroupCommitInterval time.Duration `env:"GROUP_COMMIT_INTERVAL, default=125ms" min:"0s" usedBy:"Increment,IncrementFromPubSub,RollupScheduled"`
	// ChangeCommitInterval is the least time between transactions of one collection counter by an
	// instance; 0 commits each change alone.
	ChangeCommitInterval time.Duration `env:"CHANGE_COMMIT_INTERVAL, default=1s" min:"0s" usedBy:"CountDocumentWrite"`
	// CounterSources declares the collection counters, as a file path or inline
	// (docs/collection-counters.md).
	CounterSources string `env:"COUNTER_SOURCES, default=counter-sources.json" usedBy:"Increment,Count,ConfigureCounter,IncrementFromPubSub,RollupScheduled,CountDocumentWrite"`
	// DedupeTTL is how long a keyed increment is remembered; it must outlast retries.
	DedupeTTL time.Duration `env:"DEDUPE_TTL, default=192h" min:"1h" usedBy:"Increment,IncrementFromPubSub,RollupScheduled"`
	// RequireIDToken makes Increment require a Firebase Auth ID token.
	RequireIDToken bool `env:"REQUIRE_ID_TOKEN, default=false" usedBy:"Increment"`
	// RequireAppCheck makes Increment require a Firebase App Check token.
	RequireAppCheck bool `env:"REQUIRE_APP_CHECK, default=false" usedBy:"Increment"`
	// AppCheckReplayProtection makes Increment refuse a reused App Check token. Needs
	// REQUIRE_APP_CHECK.
	AppCheckReplayProtection bool `env:"APP_CHECK_REPLAY_PROTECTION, default=false" usedBy:"Increment"`
	// PerCallerLimit, when positive, bounds each user's total per counter. Needs REQUIRE_ID_TOKEN.
	PerCallerLimit int64 `env:"PER_CALLER_LIMIT, default=0" min:"0" max:"MaxDeltaLimit" usedBy:"Increment"`
	// AllowedOrigins lists the web origins that may call Increment, Count and Top.
	AllowedOrigins string `env:"ALLOWED_ORIGINS" check:"origins" usedBy:"Increment,Count,Top"`
	// MaxMemberBytes bounds the length of a distinct counter's member.
	MaxMemberBytes int `env:"MAX_MEMBER_BYTES, default=256" min:"1" max:"MaxMemberBytes" usedBy:"Increment"`
	// RefuseAnonymousUsers makes Increment refuse anonymous users (403). Needs REQUIRE_ID_TOKEN.
	RefuseAnonymousUsers bool `env:"REFUSE_ANONYMOUS_USERS, default=false" usedBy:"Increment"`
	// RequireVerifiedEmail makes Increment refuse users without a verified email (403). Needs
	// REQUIRE_ID_TOKEN.
	RequireVerifiedEmail bool `env:"REQUIRE_VERIFIED_EMAIL, default=false" usedBy:"Increment"`
	// CheckRevokedTokens makes Increment refuse revoked tokens and disabled users (401). Needs
	// REQUIRE_ID_TOKEN.
	CheckRevokedTokens bool `env:"CHECK_REVOKED_TOKENS, default=false" usedBy:"Increment"`
	// RevokedCheckCacheTTL is how long an instance reuses a user's revocation lookup.
	RevokedCheckCacheTTL time.Duration `env:"REVOKED_CHECK_CACHE_TTL, default=30s" min:"1s" max:"5m" usedBy:"Increment"`
}

// namedBounds are the names a min or max tag may use.
var namedBounds = map[string]int64{
	"MinNumShards":   wire.MinNumShards,
	"MaxNumShards":   wire.MaxNumShards,
	"MaxDeltaLimit":  wire.MaxDeltaLimit,
	"MaxMemberBytes": wire.MaxMemberBytes,
}

// Schema names the collections of c.
func (c Config) Schema() shared.Schema {
	return shared.Schema{Counters: c.CountersCollection, Rollups: c.RollupsCollection, Dedupe: c.DedupeCollection, Tops: c.TopsCollection}
}

// ExtensionTargets parses EXTENSION_FOLDS.
func (c Config) ExtensionTargets() extshards.Targets {
	ts, _ := extshards.ParseTargets(c.ExtensionFolds)
	return ts
}

// Origins lists ALLOWED_ORIGINS.
func (c Config) Origins() []string { return strings.Fields(c.AllowedOrigins) }

// VerifiesCallers says whether Increment checks any token.
func (c Config) VerifiesCallers() bool { return c.RequireIDToken || c.RequireAppCheck }

// CounterIDs compiles COUNTER_ID_PATTERN to match whole IDs; nil when unset.
func (c Config) CounterIDs() *regexp.Regexp {
	if c.CounterIDPattern == "" {
		return nil
	}
	return regexp.MustCompile(wholeID(c.CounterIDPattern))
}

// wholeID anchors pattern to whole IDs.
func wholeID(pattern string) string { return `^(?:` + pattern + `)$` }
