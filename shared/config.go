package shared

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/shardcount/counters/functions/cloudlog"
)

// Environment variables the functions read. Deployment scripts and Terraform set the same names.
const (
	EnvProject            = "GOOGLE_CLOUD_PROJECT"
	EnvDatabase           = "FIRESTORE_DATABASE"
	EnvCountersCollection = "COUNTERS_COLLECTION"
	EnvRollupsCollection  = "ROLLUPS_COLLECTION"
	EnvDefaultNumShards   = "DEFAULT_NUM_SHARDS"
	EnvMaxDelta           = "MAX_DELTA"
	EnvShardCountCacheTTL = "SHARD_COUNT_CACHE_TTL"
	EnvLogLevel           = "LOG_LEVEL"
	EnvRequestTimeout     = "REQUEST_TIMEOUT"
	EnvDedupeCollection   = "DEDUPE_COLLECTION"
	EnvRollupInterval     = "ROLLUP_INTERVAL"
	EnvRollupLookback     = "ROLLUP_SWEEP_LOOKBACK"
	EnvGroupCommit        = "GROUP_COMMIT_INTERVAL"
	EnvDedupeTTL          = "DEDUPE_TTL"
	EnvRequireIDToken     = "REQUIRE_ID_TOKEN"
	EnvRequireAppCheck    = "REQUIRE_APP_CHECK"
	EnvPerCallerLimit     = "PER_CALLER_LIMIT"
)

// Config is the functions' configuration, read once from the environment.
type Config struct {
	// Project is the Google Cloud project; empty means detect it from the runtime's credentials.
	Project string
	// Database is the Firestore database ID.
	Database string
	// Schema names the collections.
	Schema Schema
	// DefaultNumShards is the shard count of a counter created by its first increment.
	DefaultNumShards int
	// MaxDelta bounds the magnitude of one increment.
	MaxDelta int64
	// ShardCountCacheTTL is how long an instance trusts a counter's cached shard count. A stale count
	// never loses an increment (the value sums every shard document); it only delays a reshard. It
	// bounds how fast instances follow an adapted shard count (the ramp); it costs one counter read
	// per instance per TTL for each counter the instance writes.
	ShardCountCacheTTL time.Duration
	// LogLevel is the minimum severity logged.
	LogLevel string
	// RequestTimeout bounds the database work of one request, so a database outage gets a quick 503
	// instead of a client left waiting while the client library retries.
	RequestTimeout time.Duration
	// RollupInterval is the least time between two writes of one counter's roll-up document.
	RollupInterval time.Duration
	// RollupSweepLookback is how far back the scheduled roll-up looks for written shards. It must
	// exceed the scheduler's period (one minute) with room for late or missed ticks.
	RollupSweepLookback time.Duration
	// GroupCommitInterval is the least time between two shard writes of one counter by one instance:
	// concurrent increments share a write. 0 writes every increment on its own ("guide mode").
	GroupCommitInterval time.Duration
	// DedupeTTL is how long a keyed increment (a Pub/Sub message, an HTTP Idempotency-Key) is
	// remembered: its dedupe record expires then and Firestore's TTL policy deletes it. It must outlast
	// every redelivery and client retry; the default is a day more than Pub/Sub's 7-day retention.
	DedupeTTL time.Duration
	// RequireIDToken makes Increment accept only requests with a valid Firebase Auth ID token
	// (Authorization: Bearer): the user it names is the verified caller. Off by default.
	RequireIDToken bool
	// RequireAppCheck makes Increment accept only requests with a valid Firebase App Check token
	// (X-Firebase-AppCheck): they come from the project's genuine apps. Off by default.
	RequireAppCheck bool
	// PerCallerLimit, when positive, holds each verified user's total on each counter within
	// [0, PerCallerLimit] (1: one like per user, an unlike takes it back). It needs RequireIDToken.
	PerCallerLimit int64
}

// VerifiesCallers says whether Increment checks any token.
func (c Config) VerifiesCallers() bool { return c.RequireIDToken || c.RequireAppCheck }

// MaxDeltaLimit is the largest MAX_DELTA: 2^53 keeps every delta exact in JavaScript clients that read
// the JSON answers.
const MaxDeltaLimit = 1 << 53

// DefaultDedupeTTL is a day more than Pub/Sub's default message retention (7 days), so a dedupe
// record outlives every redelivery of its message.
const DefaultDedupeTTL = 8 * 24 * time.Hour

// MinDedupeTTL is the shortest DEDUPE_TTL accepted: shorter would forget keys while Pub/Sub and
// clients still retry.
const MinDedupeTTL = time.Hour

// DefaultConfig is the configuration with nothing set in the environment.
func DefaultConfig() Config {
	return Config{
		Database:            "(default)",
		Schema:              Schema{Counters: "counters", Rollups: "rollups", Dedupe: "counter_dedupe"},
		DefaultNumShards:    10,
		MaxDelta:            1_000_000,
		ShardCountCacheTTL:  5 * time.Second,
		LogLevel:            "INFO",
		RequestTimeout:      10 * time.Second,
		RollupInterval:      time.Second,
		RollupSweepLookback: 10 * time.Minute,
		GroupCommitInterval: 125 * time.Millisecond,
		DedupeTTL:           DefaultDedupeTTL,
	}
}

// LoadConfig reads the configuration from the environment, with DefaultConfig for what is unset.
// Every invalid variable is reported, each with what is allowed.
func LoadConfig() (Config, error) {
	return ParseConfig(os.LookupEnv)
}

// ParseConfig is LoadConfig over any variable lookup, so tests need not touch the process environment.
func ParseConfig(lookup func(string) (string, bool)) (Config, error) {
	c := DefaultConfig()
	var errs []error
	str := func(name string, dst *string) {
		if v, ok := lookup(name); ok && v != "" {
			*dst = v
		}
	}
	integer := func(name string, lo, hi int64, set func(int64)) {
		v, ok := lookup(name)
		if !ok || v == "" {
			return
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s=%q: must be an integer from %d to %d", name, v, lo, hi))
			return
		}
		set(n)
	}
	boolean := func(name string, dst *bool) {
		v, ok := lookup(name)
		if !ok || v == "" {
			return
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: must be true or false", name, v))
			return
		}
		*dst = b
	}
	duration := func(name string, lo time.Duration, dst *time.Duration) {
		v, ok := lookup(name)
		if !ok || v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < lo {
			errs = append(errs, fmt.Errorf("%s=%q: must be a Go duration (e.g. 500ms, 30s) of at least %s", name, v, lo))
			return
		}
		*dst = d
	}

	str(EnvProject, &c.Project)
	str(EnvDatabase, &c.Database)
	str(EnvCountersCollection, &c.Schema.Counters)
	str(EnvRollupsCollection, &c.Schema.Rollups)
	str(EnvDedupeCollection, &c.Schema.Dedupe)
	str(EnvLogLevel, &c.LogLevel)
	integer(EnvDefaultNumShards, MinNumShards, MaxNumShards, func(n int64) { c.DefaultNumShards = int(n) })
	integer(EnvMaxDelta, 1, MaxDeltaLimit, func(n int64) { c.MaxDelta = n })
	duration(EnvShardCountCacheTTL, 0, &c.ShardCountCacheTTL)
	duration(EnvRequestTimeout, time.Millisecond, &c.RequestTimeout)
	duration(EnvRollupInterval, 100*time.Millisecond, &c.RollupInterval)
	duration(EnvRollupLookback, 2*time.Minute, &c.RollupSweepLookback)
	duration(EnvGroupCommit, 0, &c.GroupCommitInterval)
	duration(EnvDedupeTTL, MinDedupeTTL, &c.DedupeTTL)
	boolean(EnvRequireIDToken, &c.RequireIDToken)
	boolean(EnvRequireAppCheck, &c.RequireAppCheck)
	integer(EnvPerCallerLimit, 0, MaxDeltaLimit, func(n int64) { c.PerCallerLimit = n })
	if c.PerCallerLimit > 0 && !c.RequireIDToken {
		errs = append(errs, fmt.Errorf("%s=%d needs %s=true: the limit is per signed-in user", EnvPerCallerLimit, c.PerCallerLimit, EnvRequireIDToken))
	}

	collections := []struct{ env, id string }{
		{EnvCountersCollection, c.Schema.Counters},
		{EnvRollupsCollection, c.Schema.Rollups},
		{EnvDedupeCollection, c.Schema.Dedupe},
	}
	for _, coll := range collections {
		if err := ValidateCounterID(coll.id); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: not a valid collection ID: %w", coll.env, coll.id, err))
		}
	}
	for i, a := range collections {
		for _, b := range collections[i+1:] {
			if a.id == b.id {
				errs = append(errs, fmt.Errorf("%s and %s must differ, both are %q", a.env, b.env, a.id))
			}
		}
	}
	if _, err := cloudlog.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvLogLevel, err))
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("invalid configuration: %w", errors.Join(errs...))
	}
	return c, nil
}
