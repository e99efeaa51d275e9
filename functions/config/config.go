// Package config declares every setting of the functions once, as a field of Config: its
// environment variable and default (the env tag, read by go-envconfig), its bounds (min, max), the
// functions that use it (usedBy) and its meaning (the field's doc comment, which docs/settings.md
// shows). Parse reads them and reports every invalid variable with what is allowed.
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
// Tags: env is the variable and its default (go-envconfig syntax); min and max bound a number or a
// duration (a number or one of namedBounds); check names a rule of stringChecks; usedBy lists the entry points that use the setting,
// "*" for all; option says that deployments set the variable from their own project or database
// option instead of --env / var.environment.
type Config struct {
	// Project is the Google Cloud project; empty means detect it from the runtime's credentials.
	Project string `env:"GOOGLE_CLOUD_PROJECT" usedBy:"*" option:"project"`
	// Database is the Firestore database ID.
	Database string `env:"FIRESTORE_DATABASE, default=(default)" usedBy:"*" option:"database"`
	// CountersCollection is the collection of counter documents; their shards are its subcollection
	// "shards".
	CountersCollection string `env:"COUNTERS_COLLECTION, default=counters" check:"collection" usedBy:"*"`
	// RollupsCollection is the collection of the roll-up documents apps read.
	RollupsCollection string `env:"ROLLUPS_COLLECTION, default=rollups" check:"collection" usedBy:"Count,RollupOnShardWrite,RollupScheduled"`
	// TopsCollection is the collection of the top lists apps read: {group}_{window}.
	TopsCollection string `env:"TOPS_COLLECTION, default=tops" check:"collection" usedBy:"Top,RollupOnShardWrite,RollupScheduled"`
	// DedupeCollection is the collection of the dedupe records of keyed increments (a Pub/Sub
	// message, an HTTP Idempotency-Key); Firestore's TTL policy deletes them, so its ID says "counter".
	DedupeCollection string `env:"DEDUPE_COLLECTION, default=counter_dedupe" check:"counterCollection" usedBy:"Increment,IncrementFromPubSub"`
	// DefaultNumShards is the shard count of a counter created by its first increment, and the
	// least shard count the roll-up adapts a counter to unless ConfigureCounter said otherwise.
	DefaultNumShards int `env:"DEFAULT_NUM_SHARDS, default=10" min:"MinNumShards" max:"MaxNumShards" usedBy:"Increment,IncrementFromPubSub,ConfigureCounter,RollupOnShardWrite,RollupScheduled"`
	// CounterIDPattern, when set, is an RE2 regular expression every counter ID must match as a whole
	// (e.g. post-[0-9]{1,12}): an increment, a Pub/Sub message, a configuration or a Count of another
	// ID is refused with 400 (field "counter") and changes nothing. Empty: any valid Firestore
	// document ID. Set it before opening increments to the public.
	CounterIDPattern string `env:"COUNTER_ID_PATTERN" check:"counterIDPattern" usedBy:"Increment,Count,ConfigureCounter,IncrementFromPubSub"`
	// CreateOnIncrement lets an increment (HTTP or Pub/Sub) of an unknown counter create it. false:
	// such an increment answers 404 (a message is acknowledged and logged as poison) and writes
	// nothing, also when it races the counter's deletion; only ConfigureCounter creates counters.
	CreateOnIncrement bool `env:"CREATE_ON_INCREMENT, default=true" usedBy:"Increment,IncrementFromPubSub"`
	// MaxDelta bounds the magnitude of one increment.
	MaxDelta int64 `env:"MAX_DELTA, default=1000000" min:"1" max:"MaxDeltaLimit" usedBy:"Increment,IncrementFromPubSub"`
	// ShardCountCacheTTL is how long an instance trusts a counter's cached shard count. A stale count
	// never loses an increment (the value sums every shard document); it only delays a reshard. It
	// bounds how fast instances follow an adapted shard count (the ramp); it costs one counter read
	// per instance per TTL for each counter the instance writes.
	ShardCountCacheTTL time.Duration `env:"SHARD_COUNT_CACHE_TTL, default=5s" min:"0s" usedBy:"Increment,IncrementFromPubSub"`
	// LogLevel is the minimum severity logged.
	LogLevel string `env:"LOG_LEVEL, default=INFO" check:"logLevel" usedBy:"*"`
	// RequestTimeout bounds the database work of one request, so a database outage gets a quick 503
	// instead of a client left waiting while the client library retries.
	RequestTimeout time.Duration `env:"REQUEST_TIMEOUT, default=10s" min:"1ms" usedBy:"Increment,Count,ConfigureCounter,IncrementFromPubSub"`
	// RollupInterval is the least time between two writes of one counter's roll-up document.
	RollupInterval time.Duration `env:"ROLLUP_INTERVAL, default=1s" min:"100ms" usedBy:"RollupOnShardWrite,RollupScheduled"`
	// HourBucketsKept is how long the hourly buckets of counters with the hour window are kept: about
	// once a day a roll-up deletes older ones from the counter's shards (a shard would otherwise
	// reach Firestore's 40,000 index entries after about 2.3 years). Day and month buckets are kept.
	HourBucketsKept time.Duration `env:"HOUR_BUCKETS_KEPT, default=2160h" min:"24h" usedBy:"RollupOnShardWrite,RollupScheduled"`
	// ExtensionFoldInterval is the least time between two folds of the firestore-counter extension's
	// shards into one main document (docs/migrate-from-firestore-counter.md).
	ExtensionFoldInterval time.Duration `env:"EXTENSION_FOLD_INTERVAL, default=1s" min:"100ms" usedBy:"FoldExtensionShards"`
	// ExtensionFolds names what FoldExtensionShards folds: entries separated by blanks, each a
	// pattern of main documents and the fields their clients count, PATTERN:FIELD[,FIELD...] (e.g.
	// "pages/{page}:visits posts/{post}:likes,stats.views"; {name} matches one ID). Shards under any
	// other document, other fields and shard IDs not of the extension's form are never folded. Empty:
	// nothing is (docs/migrate-from-firestore-counter.md).
	ExtensionFolds string `env:"EXTENSION_FOLDS" check:"extensionFolds" usedBy:"FoldExtensionShards"`
	// RollupSweepLookback is how far back the scheduled roll-up looks for written shards. It must
	// exceed the scheduler's period (one minute) with room for late or missed ticks.
	RollupSweepLookback time.Duration `env:"ROLLUP_SWEEP_LOOKBACK, default=10m" min:"2m" usedBy:"RollupScheduled"`
	// GroupCommitInterval is the least time between two shard writes of one counter by one instance:
	// concurrent increments share a write. 0 writes every increment on its own ("guide mode").
	GroupCommitInterval time.Duration `env:"GROUP_COMMIT_INTERVAL, default=125ms" min:"0s" usedBy:"Increment,IncrementFromPubSub"`
	// ChangeCommitInterval is the least time between two transactions of one collection counter by
	// one instance: its document changes share one, and its ledger document takes one write.
	ChangeCommitInterval time.Duration `env:"CHANGE_COMMIT_INTERVAL, default=1s" min:"0s" usedBy:"CountDocumentWrite"`
	// CounterSources declares the collection counters (docs/collection-counters.md): a file's path
	// (a missing file declares none), or the declarations themselves, as the deploy paths set it.
	CounterSources string `env:"COUNTER_SOURCES, default=counter-sources.json" usedBy:"CountDocumentWrite"`
	// DedupeTTL is how long a keyed increment is remembered: its dedupe record expires then and
	// Firestore's TTL policy deletes it. It must outlast every redelivery and client retry; the
	// default is a day more than Pub/Sub's 7-day retention.
	DedupeTTL time.Duration `env:"DEDUPE_TTL, default=192h" min:"1h" usedBy:"Increment,IncrementFromPubSub,CountDocumentWrite"`
	// RequireIDToken makes Increment accept only requests with a valid Firebase Auth ID token
	// (Authorization: Bearer): the user it names is the verified caller.
	RequireIDToken bool `env:"REQUIRE_ID_TOKEN, default=false" usedBy:"Increment"`
	// RequireAppCheck makes Increment accept only requests with a valid Firebase App Check token
	// (X-Firebase-AppCheck), which the project's genuine apps get. A captured token replays, as the
	// app, until it expires (1 hour by default, up to 7 days) unless APP_CHECK_REPLAY_PROTECTION.
	RequireAppCheck bool `env:"REQUIRE_APP_CHECK, default=false" usedBy:"Increment"`
	// AppCheckReplayProtection makes Increment consume each App Check token through the App Check
	// API: a used one gets 403, so clients send a limited-use token per request. One API call per
	// request; the deploy grants roles/firebaseappcheck.tokenVerifier. It needs REQUIRE_APP_CHECK.
	AppCheckReplayProtection bool `env:"APP_CHECK_REPLAY_PROTECTION, default=false" usedBy:"Increment"`
	// PerCallerLimit, when positive, holds each verified user's total on each counter within
	// [0, the limit] (1: one like per user, an unlike takes it back). It needs REQUIRE_ID_TOKEN.
	PerCallerLimit int64 `env:"PER_CALLER_LIMIT, default=0" min:"0" max:"MaxDeltaLimit" usedBy:"Increment"`
	// AllowedOrigins lists the web origins whose pages may call Increment, Count and Top from a
	// browser (CORS): their preflights are answered and their answers readable. Empty: no page of
	// another origin may call them. ConfigureCounter never answers browsers (docs/api.md, "Browsers (CORS)").
	AllowedOrigins string `env:"ALLOWED_ORIGINS" check:"origins" usedBy:"Increment,Count,Top"`
	// MaxMemberBytes bounds a distinct counter's member: a longer one is refused with 400 (field
	// "member"). Each member costs a document per window and one all time, so on a public Increment
	// keep it to what the app's members need.
	MaxMemberBytes int `env:"MAX_MEMBER_BYTES, default=256" min:"1" max:"MaxMemberBytes" usedBy:"Increment"`
	// RefuseAnonymousUsers makes Increment refuse (403) the ID tokens of anonymous sign-in, which any
	// client gets at will: it keeps PER_CALLER_LIMIT's "one per user" to users with an account. It
	// needs REQUIRE_ID_TOKEN.
	RefuseAnonymousUsers bool `env:"REFUSE_ANONYMOUS_USERS, default=false" usedBy:"Increment"`
	// RequireVerifiedEmail makes Increment refuse (403) ID tokens without a verified email address
	// (claim email_verified): email sign-up, like anonymous sign-in, makes accounts at will, so
	// PER_CALLER_LIMIT's "one per user" and distinct counters hold per address only with it. It
	// needs REQUIRE_ID_TOKEN.
	RequireVerifiedEmail bool `env:"REQUIRE_VERIFIED_EMAIL, default=false" usedBy:"Increment"`
	// CheckRevokedTokens makes Increment refuse (401) an ID token issued before the user's sessions
	// were revoked (a revocation, a password change) or of a disabled user; otherwise such a token
	// counts until it expires, up to an hour. Each instance looks a user up (Identity Toolkit
	// accounts:lookup, on the project's Identity Toolkit quota) once per REVOKED_CHECK_CACHE_TTL,
	// so a revocation takes effect within it. The deploy grants the runtime account
	// roles/firebaseauth.viewer for it. It needs REQUIRE_ID_TOKEN.
	CheckRevokedTokens bool `env:"CHECK_REVOKED_TOKENS, default=false" usedBy:"Increment"`
	// RevokedCheckCacheTTL is how long an instance reuses a user's lookup for CHECK_REVOKED_TOKENS
	// (for up to 10,000 users).
	RevokedCheckCacheTTL time.Duration `env:"REVOKED_CHECK_CACHE_TTL, default=30s" min:"1s" max:"5m" usedBy:"Increment"`
}

// namedBounds are the constants a min or max tag may name.
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

// ExtensionTargets are EXTENSION_FOLDS, which Load has checked.
func (c Config) ExtensionTargets() extshards.Targets {
	ts, _ := extshards.ParseTargets(c.ExtensionFolds)
	return ts
}

// Origins lists ALLOWED_ORIGINS, which Load has checked; none when it is empty.
func (c Config) Origins() []string { return strings.Fields(c.AllowedOrigins) }

// VerifiesCallers says whether Increment checks any token.
func (c Config) VerifiesCallers() bool { return c.RequireIDToken || c.RequireAppCheck }

// CounterIDs returns the compiled COUNTER_ID_PATTERN, anchored to match whole IDs; nil when none is
// set. The pattern must be valid (Load checks it).
func (c Config) CounterIDs() *regexp.Regexp {
	if c.CounterIDPattern == "" {
		return nil
	}
	return regexp.MustCompile(wholeID(c.CounterIDPattern))
}

// wholeID anchors pattern so that it matches whole IDs only.
func wholeID(pattern string) string { return `^(?:` + pattern + `)$` }
