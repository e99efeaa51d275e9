package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// env is a map-backed variable lookup for Parse.
type env map[string]string

func (e env) lookup(name string) (string, bool) {
	v, ok := e[name]
	return v, ok
}

// TestDefault: the defaults are today's, by field (a setting added later is covered by
// TestEveryDefaultIsAllowed and docs/settings.md).
func TestDefault(t *testing.T) {
	want := map[string]any{
		"Project":            "",
		"Database":           "(default)",
		"CountersCollection": "counters", "RollupsCollection": "rollups", "DedupeCollection": "counter_dedupe",
		"DefaultNumShards":    10,
		"MaxDelta":            int64(1_000_000),
		"ShardCountCacheTTL":  5 * time.Second,
		"LogLevel":            "INFO",
		"RequestTimeout":      10 * time.Second,
		"RollupInterval":      time.Second,
		"RollupSweepLookback": 10 * time.Minute,
		"GroupCommitInterval": 125 * time.Millisecond,
		"DedupeTTL":           192 * time.Hour,
		"HourBucketsKept":     90 * 24 * time.Hour,
		"RequireIDToken":      false,
		"RequireAppCheck":     false,
		"PerCallerLimit":      int64(0),
	}
	got := reflect.ValueOf(Default())
	for field, w := range want {
		if g := got.FieldByName(field).Interface(); g != w {
			t.Errorf("Default().%s = %v, want %v", field, g, w)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	tests := []struct {
		name string
		env  env
	}{
		{name: "nothing set", env: env{}},
		{name: "unrelated variables set", env: env{"HOME": "/root", "PORT": "8080"}},
		{name: "every variable empty", env: env{
			"GOOGLE_CLOUD_PROJECT":  "",
			"FIRESTORE_DATABASE":    "",
			"COUNTERS_COLLECTION":   "",
			"ROLLUPS_COLLECTION":    "",
			"DEFAULT_NUM_SHARDS":    "",
			"MAX_DELTA":             "",
			"SHARD_COUNT_CACHE_TTL": "",
			"LOG_LEVEL":             "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.env.lookup)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if want := Default(); got != want {
				t.Errorf("Parse = %+v, want Default %+v", got, want)
			}
		})
	}
}

func TestParseEachVariable(t *testing.T) {
	tests := []struct {
		name   string
		env    env
		modify func(*Config)
	}{
		{name: "GOOGLE_CLOUD_PROJECT", env: env{"GOOGLE_CLOUD_PROJECT": "my-proj"}, modify: func(c *Config) { c.Project = "my-proj" }},
		{name: "FIRESTORE_DATABASE", env: env{"FIRESTORE_DATABASE": "countersdb"}, modify: func(c *Config) { c.Database = "countersdb" }},
		{name: "COUNTERS_COLLECTION", env: env{"COUNTERS_COLLECTION": "ctrs"}, modify: func(c *Config) { c.CountersCollection = "ctrs" }},
		{name: "ROLLUPS_COLLECTION", env: env{"ROLLUPS_COLLECTION": "sums"}, modify: func(c *Config) { c.RollupsCollection = "sums" }},
		{name: "DEFAULT_NUM_SHARDS min", env: env{"DEFAULT_NUM_SHARDS": "1"}, modify: func(c *Config) { c.DefaultNumShards = 1 }},
		{name: "DEFAULT_NUM_SHARDS mid", env: env{"DEFAULT_NUM_SHARDS": "25"}, modify: func(c *Config) { c.DefaultNumShards = 25 }},
		{name: "DEFAULT_NUM_SHARDS leading zero is decimal", env: env{"DEFAULT_NUM_SHARDS": "010"}, modify: func(c *Config) { c.DefaultNumShards = 10 }},
		{name: "DEFAULT_NUM_SHARDS max", env: env{"DEFAULT_NUM_SHARDS": "1000"}, modify: func(c *Config) { c.DefaultNumShards = 1000 }},
		{name: "MAX_DELTA one", env: env{"MAX_DELTA": "1"}, modify: func(c *Config) { c.MaxDelta = 1 }},
		{name: "MAX_DELTA 2^53", env: env{"MAX_DELTA": "9007199254740992"}, modify: func(c *Config) { c.MaxDelta = 1 << 53 }},
		{name: "SHARD_COUNT_CACHE_TTL 5m", env: env{"SHARD_COUNT_CACHE_TTL": "5m"}, modify: func(c *Config) { c.ShardCountCacheTTL = 5 * time.Minute }},
		{name: "SHARD_COUNT_CACHE_TTL 500ms", env: env{"SHARD_COUNT_CACHE_TTL": "500ms"}, modify: func(c *Config) { c.ShardCountCacheTTL = 500 * time.Millisecond }},
		{name: "SHARD_COUNT_CACHE_TTL zero", env: env{"SHARD_COUNT_CACHE_TTL": "0s"}, modify: func(c *Config) { c.ShardCountCacheTTL = 0 }},
		{name: "DEDUPE_TTL 1h", env: env{"DEDUPE_TTL": "1h"}, modify: func(c *Config) { c.DedupeTTL = time.Hour }},
		{name: "DEDUPE_TTL 30 days", env: env{"DEDUPE_TTL": "720h"}, modify: func(c *Config) { c.DedupeTTL = 720 * time.Hour }},
		{name: "REQUIRE_ID_TOKEN", env: env{"REQUIRE_ID_TOKEN": "true"}, modify: func(c *Config) { c.RequireIDToken = true }},
		{name: "REQUIRE_APP_CHECK", env: env{"REQUIRE_APP_CHECK": "1"}, modify: func(c *Config) { c.RequireAppCheck = true }},
		{name: "PER_CALLER_LIMIT", env: env{"REQUIRE_ID_TOKEN": "true", "PER_CALLER_LIMIT": "1"},
			modify: func(c *Config) { c.RequireIDToken, c.PerCallerLimit = true, 1 }},
		{name: "COUNTER_ID_PATTERN", env: env{"COUNTER_ID_PATTERN": "post-[0-9]+"}, modify: func(c *Config) { c.CounterIDPattern = "post-[0-9]+" }},
		{name: "REFUSE_ANONYMOUS_USERS", env: env{"REQUIRE_ID_TOKEN": "true", "REFUSE_ANONYMOUS_USERS": "true"},
			modify: func(c *Config) { c.RequireIDToken, c.RefuseAnonymousUsers = true, true }},
		{name: "CHECK_REVOKED_TOKENS", env: env{"REQUIRE_ID_TOKEN": "true", "CHECK_REVOKED_TOKENS": "true"},
			modify: func(c *Config) { c.RequireIDToken, c.CheckRevokedTokens = true, true }},
		{name: "APP_CHECK_REPLAY_PROTECTION", env: env{"REQUIRE_APP_CHECK": "true", "APP_CHECK_REPLAY_PROTECTION": "true"},
			modify: func(c *Config) { c.RequireAppCheck, c.AppCheckReplayProtection = true, true }},
		{name: "ALLOWED_ORIGINS one", env: env{"ALLOWED_ORIGINS": "https://app.example.com"},
			modify: func(c *Config) { c.AllowedOrigins = "https://app.example.com" }},
		{name: "ALLOWED_ORIGINS several, ports, IPv6, app schemes", env: env{"ALLOWED_ORIGINS": "https://app.example.com  http://localhost:5173 http://[::1]:8000\tcapacitor://localhost"},
			modify: func(c *Config) {
				c.AllowedOrigins = "https://app.example.com  http://localhost:5173 http://[::1]:8000\tcapacitor://localhost"
			}},
		{name: "LOG_LEVEL DEBUG", env: env{"LOG_LEVEL": "DEBUG"}, modify: func(c *Config) { c.LogLevel = "DEBUG" }},
		{name: "LOG_LEVEL warn", env: env{"LOG_LEVEL": "warn"}, modify: func(c *Config) { c.LogLevel = "warn" }},
		{name: "all at once", env: env{
			"GOOGLE_CLOUD_PROJECT":  "p1",
			"FIRESTORE_DATABASE":    "db1",
			"COUNTERS_COLLECTION":   "c1",
			"ROLLUPS_COLLECTION":    "r1",
			"DEFAULT_NUM_SHARDS":    "7",
			"MAX_DELTA":             "42",
			"SHARD_COUNT_CACHE_TTL": "1m30s",
			"LOG_LEVEL":             "ERROR",
			"REQUEST_TIMEOUT":       "2500ms",
			"DEDUPE_COLLECTION":     "counter_d1",
			"ROLLUP_INTERVAL":       "250ms",
			"ROLLUP_SWEEP_LOOKBACK": "15m",
			"GROUP_COMMIT_INTERVAL": "0",
			"DEDUPE_TTL":            "36h",
		}, modify: func(c *Config) {
			c.Project, c.Database = "p1", "db1"
			c.CountersCollection, c.RollupsCollection, c.DedupeCollection = "c1", "r1", "counter_d1"
			c.DefaultNumShards, c.MaxDelta, c.ShardCountCacheTTL, c.LogLevel = 7, 42, 90*time.Second, "ERROR"
			c.RequestTimeout, c.RollupInterval, c.RollupSweepLookback = 2500*time.Millisecond, 250*time.Millisecond, 15*time.Minute
			c.GroupCommitInterval, c.DedupeTTL = 0, 36*time.Hour
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Default()
			tt.modify(&want)
			got, err := Parse(tt.env.lookup)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got != want {
				t.Errorf("Parse = %+v, want %+v", got, want)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name string
		env  env
		// wantMsgs must all appear in the error message: the variable, the bad value where it is
		// echoed, and what is allowed.
		wantMsgs []string
	}{
		{name: "num shards zero", env: env{"DEFAULT_NUM_SHARDS": "0"},
			wantMsgs: []string{"DEFAULT_NUM_SHARDS", `"0"`, "integer from 1 to 1000"}},
		{name: "num shards too many", env: env{"DEFAULT_NUM_SHARDS": "1001"},
			wantMsgs: []string{"DEFAULT_NUM_SHARDS", `"1001"`, "integer from 1 to 1000"}},
		{name: "num shards negative", env: env{"DEFAULT_NUM_SHARDS": "-3"},
			wantMsgs: []string{"DEFAULT_NUM_SHARDS", "integer from 1 to 1000"}},
		{name: "num shards not a number", env: env{"DEFAULT_NUM_SHARDS": "ten"},
			wantMsgs: []string{"DEFAULT_NUM_SHARDS", `"ten"`, "integer from 1 to 1000"}},
		{name: "num shards float", env: env{"DEFAULT_NUM_SHARDS": "2.5"},
			wantMsgs: []string{"DEFAULT_NUM_SHARDS", "integer from 1 to 1000"}},
		{name: "num shards hexadecimal", env: env{"DEFAULT_NUM_SHARDS": "0x10"},
			wantMsgs: []string{"DEFAULT_NUM_SHARDS", `"0x10"`, "integer from 1 to 1000"}},
		{name: "max delta with underscores", env: env{"MAX_DELTA": "1_000"},
			wantMsgs: []string{"MAX_DELTA", `"1_000"`, "integer from 1 to 9007199254740992"}},
		{name: "max delta zero", env: env{"MAX_DELTA": "0"},
			wantMsgs: []string{"MAX_DELTA", `"0"`, "integer from 1 to 9007199254740992"}},
		{name: "max delta above 2^53", env: env{"MAX_DELTA": "9007199254740993"},
			wantMsgs: []string{"MAX_DELTA", "integer from 1 to 9007199254740992"}},
		{name: "max delta overflow", env: env{"MAX_DELTA": "99999999999999999999"},
			wantMsgs: []string{"MAX_DELTA", "integer from 1 to 9007199254740992"}},
		{name: "max delta garbage", env: env{"MAX_DELTA": "lots"},
			wantMsgs: []string{"MAX_DELTA", `"lots"`, "integer"}},
		{name: "ttl no unit", env: env{"SHARD_COUNT_CACHE_TTL": "30"},
			wantMsgs: []string{"SHARD_COUNT_CACHE_TTL", `"30"`, "Go duration", "at least 0s"}},
		{name: "ttl negative", env: env{"SHARD_COUNT_CACHE_TTL": "-1s"},
			wantMsgs: []string{"SHARD_COUNT_CACHE_TTL", `"-1s"`, "Go duration", "at least 0s"}},
		{name: "ttl garbage", env: env{"SHARD_COUNT_CACHE_TTL": "soon"},
			wantMsgs: []string{"SHARD_COUNT_CACHE_TTL", "Go duration"}},
		{name: "dedupe ttl under an hour", env: env{"DEDUPE_TTL": "59m"},
			wantMsgs: []string{"DEDUPE_TTL", `"59m"`, "Go duration", "at least 1h0m0s"}},
		{name: "dedupe ttl in days", env: env{"DEDUPE_TTL": "8d"},
			wantMsgs: []string{"DEDUPE_TTL", `"8d"`, "Go duration"}},
		{name: "dedupe collection equals counters", env: env{"DEDUPE_COLLECTION": "counters"},
			wantMsgs: []string{"COUNTERS_COLLECTION", "DEDUPE_COLLECTION", "must differ"}},
		{name: "dedupe collection not ours by name", env: env{"DEDUPE_COLLECTION": "dedupe"},
			wantMsgs: []string{"DEDUPE_COLLECTION", `"dedupe"`, `must contain "counter"`, "TTL policy"}},
		{name: "require id token not a bool", env: env{"REQUIRE_ID_TOKEN": "yes please"},
			wantMsgs: []string{"REQUIRE_ID_TOKEN", `"yes please"`, "true or false"}},
		{name: "per caller limit without id tokens", env: env{"PER_CALLER_LIMIT": "1"},
			wantMsgs: []string{"PER_CALLER_LIMIT", "REQUIRE_ID_TOKEN", "per signed-in user"}},
		{name: "per caller limit negative", env: env{"REQUIRE_ID_TOKEN": "true", "PER_CALLER_LIMIT": "-1"},
			wantMsgs: []string{"PER_CALLER_LIMIT", `"-1"`, "integer from 0"}},
		{name: "counter ID pattern not RE2", env: env{"COUNTER_ID_PATTERN": "post-(?=[0-9])"},
			wantMsgs: []string{"COUNTER_ID_PATTERN", `"post-(?=[0-9])"`, "RE2"}},
		{name: "refuse anonymous users without id tokens", env: env{"REFUSE_ANONYMOUS_USERS": "true"},
			wantMsgs: []string{"REFUSE_ANONYMOUS_USERS", "REQUIRE_ID_TOKEN"}},
		{name: "check revoked tokens without id tokens", env: env{"CHECK_REVOKED_TOKENS": "true"},
			wantMsgs: []string{"CHECK_REVOKED_TOKENS", "REQUIRE_ID_TOKEN"}},
		{name: "replay protection without app check", env: env{"APP_CHECK_REPLAY_PROTECTION": "true"},
			wantMsgs: []string{"APP_CHECK_REPLAY_PROTECTION", "REQUIRE_APP_CHECK"}},
		{name: "origins with a wildcard", env: env{"ALLOWED_ORIGINS": "*"},
			wantMsgs: []string{"ALLOWED_ORIGINS", `"*"`, "wildcards are not supported", "scheme://host[:port]"}},
		{name: "origins with a wildcard subdomain", env: env{"ALLOWED_ORIGINS": "https://app.example.com https://*.example.com"},
			wantMsgs: []string{"ALLOWED_ORIGINS", `"https://*.example.com" is not an origin`, "wildcards"}},
		{name: "origin with a trailing slash", env: env{"ALLOWED_ORIGINS": "https://app.example.com/"},
			wantMsgs: []string{`"https://app.example.com/" is not an origin`, "no path", "trailing /"}},
		{name: "origin with a path", env: env{"ALLOWED_ORIGINS": "https://app.example.com/likes"},
			wantMsgs: []string{`"https://app.example.com/likes" is not an origin`, "no path"}},
		{name: "origin with a query", env: env{"ALLOWED_ORIGINS": "https://app.example.com?x=1"},
			wantMsgs: []string{"is not an origin", "query"}},
		{name: "origin without a scheme", env: env{"ALLOWED_ORIGINS": "app.example.com"},
			wantMsgs: []string{`"app.example.com" is not an origin`, "scheme://host[:port]"}},
		{name: "origin scheme only", env: env{"ALLOWED_ORIGINS": "https://"},
			wantMsgs: []string{`"https://" is not an origin`, "scheme://host[:port]"}},
		{name: "origin null", env: env{"ALLOWED_ORIGINS": "null"},
			wantMsgs: []string{`"null" is not an origin`}},
		{name: "origin in upper case", env: env{"ALLOWED_ORIGINS": "https://App.Example.com"},
			wantMsgs: []string{"is not an origin", "lower case"}},
		{name: "origin with the default port", env: env{"ALLOWED_ORIGINS": "https://app.example.com:443"},
			wantMsgs: []string{"is not an origin", "default port 443", "write https://app.example.com"}},
		{name: "origin with a bad port", env: env{"ALLOWED_ORIGINS": "http://localhost:99999"},
			wantMsgs: []string{"is not an origin", "port", "1 to 65535"}},
		{name: "origin with user info", env: env{"ALLOWED_ORIGINS": "https://me@app.example.com"},
			wantMsgs: []string{"is not an origin", "user name"}},
		{name: "origins separated by commas", env: env{"ALLOWED_ORIGINS": "https://a.example.com,https://b.example.com"},
			wantMsgs: []string{"ALLOWED_ORIGINS", "spaces, not commas"}},
		{name: "log level unknown", env: env{"LOG_LEVEL": "LOUD"},
			wantMsgs: []string{"LOG_LEVEL", `"LOUD"`, "DEBUG, INFO, WARNING or ERROR"}},
		{name: "log level critical not accepted", env: env{"LOG_LEVEL": "CRITICAL"},
			wantMsgs: []string{"LOG_LEVEL", "DEBUG, INFO, WARNING or ERROR"}},
		{name: "counters collection with slash", env: env{"COUNTERS_COLLECTION": "a/b"},
			wantMsgs: []string{"COUNTERS_COLLECTION", `"a/b"`, "collection ID"}},
		{name: "rollups collection with slash", env: env{"ROLLUPS_COLLECTION": "a/b"},
			wantMsgs: []string{"ROLLUPS_COLLECTION", `"a/b"`, "collection ID"}},
		{name: "counters collection dot dot", env: env{"COUNTERS_COLLECTION": ".."},
			wantMsgs: []string{"COUNTERS_COLLECTION", "collection ID"}},
		{name: "rollups collection reserved", env: env{"ROLLUPS_COLLECTION": "__r__"},
			wantMsgs: []string{"ROLLUPS_COLLECTION", "collection ID"}},
		{name: "counters collection invalid UTF-8", env: env{"COUNTERS_COLLECTION": "\xff"},
			wantMsgs: []string{"COUNTERS_COLLECTION", "collection ID"}},
		{name: "collections equal", env: env{"COUNTERS_COLLECTION": "same", "ROLLUPS_COLLECTION": "same"},
			wantMsgs: []string{"COUNTERS_COLLECTION", "ROLLUPS_COLLECTION", "must differ", `"same"`}},
		{name: "rollups set to default counters name", env: env{"ROLLUPS_COLLECTION": "counters"},
			wantMsgs: []string{"must differ", `"counters"`}},
		{name: "counters set to default rollups name", env: env{"COUNTERS_COLLECTION": "rollups"},
			wantMsgs: []string{"must differ", `"rollups"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.env.lookup)
			if err == nil {
				t.Fatalf("Parse = %+v, nil; want error", got)
			}
			if got != (Config{}) {
				t.Errorf("Parse returned %+v with an error, want zero Config", got)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "invalid configuration: ") {
				t.Errorf("error %q does not start with %q", msg, "invalid configuration: ")
			}
			for _, want := range tt.wantMsgs {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
		})
	}
}

// TestOriginsListsEachOrigin: ALLOWED_ORIGINS splits on any run of spaces (or tabs); unset is none.
func TestOriginsListsEachOrigin(t *testing.T) {
	c, err := Parse(env{"ALLOWED_ORIGINS": " https://app.example.com   http://localhost:5173\t"}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Origins(), []string{"https://app.example.com", "http://localhost:5173"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Origins() = %q, want %q", got, want)
	}
	if got := Default().Origins(); len(got) != 0 {
		t.Errorf("Default().Origins() = %q, want none", got)
	}
}

// TestCounterIDsMatchWholeIDs: the pattern is anchored, also across an alternation, and unset means
// no pattern.
func TestCounterIDsMatchWholeIDs(t *testing.T) {
	if Default().CounterIDs() != nil {
		t.Error("no COUNTER_ID_PATTERN: want no pattern")
	}
	c := Default()
	c.CounterIDPattern = "post-[0-9]+|likes"
	re := c.CounterIDs()
	for id, want := range map[string]bool{"post-12": true, "likes": true, "post-12x": false, "xlikes": false, "my-post-1": false, "": false} {
		if got := re.MatchString(id); got != want {
			t.Errorf("%q matches %t, want %t", id, got, want)
		}
	}
}

func TestParseReportsEveryInvalidVariable(t *testing.T) {
	e := env{
		"DEFAULT_NUM_SHARDS":    "0",
		"MAX_DELTA":             "x",
		"SHARD_COUNT_CACHE_TTL": "-5s",
		"LOG_LEVEL":             "LOUD",
		"COUNTERS_COLLECTION":   "a/b",
		"GOOGLE_CLOUD_PROJECT":  "fine",
	}
	_, err := Parse(e.lookup)
	if err == nil {
		t.Fatal("Parse = nil error, want every invalid variable reported")
	}
	msg := err.Error()
	for _, name := range []string{"DEFAULT_NUM_SHARDS", "MAX_DELTA", "SHARD_COUNT_CACHE_TTL", "LOG_LEVEL", "COUNTERS_COLLECTION"} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(msg, name) {
				t.Errorf("error %q does not report %s", msg, name)
			}
		})
	}
	t.Run("one line per problem", func(t *testing.T) {
		// errors.Join separates the reports with newlines.
		if got := strings.Count(msg, "\n") + 1; got != 5 {
			t.Errorf("error has %d lines, want 5 (one per invalid variable):\n%s", got, msg)
		}
	})
	t.Run("valid variable not reported", func(t *testing.T) {
		if strings.Contains(msg, "GOOGLE_CLOUD_PROJECT") {
			t.Errorf("error %q mentions %s, which was valid", msg, "GOOGLE_CLOUD_PROJECT")
		}
	})
}

func TestLoadReadsEnvironment(t *testing.T) {
	for _, name := range []string{"GOOGLE_CLOUD_PROJECT", "FIRESTORE_DATABASE", "COUNTERS_COLLECTION", "ROLLUPS_COLLECTION",
		"DEFAULT_NUM_SHARDS", "MAX_DELTA", "SHARD_COUNT_CACHE_TTL", "LOG_LEVEL", "COUNTER_SOURCES"} {
		t.Setenv(name, "")
	}
	t.Setenv("DEFAULT_NUM_SHARDS", "3")
	t.Setenv("ROLLUPS_COLLECTION", "totals")
	got, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Default()
	want.DefaultNumShards = 3
	want.RollupsCollection = "totals"
	if got != want {
		t.Errorf("Load = %+v, want %+v", got, want)
	}
}

// TestEveryDefaultIsAllowed: each declared default passes its own setting's checks, and setting a
// variable to its default changes nothing.
func TestEveryDefaultIsAllowed(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Settings() {
		if seen[s.Name] || s.Name == "" {
			t.Errorf("field %s: variable %q is empty or declared twice", s.Field, s.Name)
		}
		seen[s.Name] = true
		if s.Default == "" {
			continue
		}
		got, err := Parse(env{s.Name: s.Default}.lookup)
		if err != nil || got != Default() {
			t.Errorf("%s=%q (its default): Parse = %+v, %v; want Default()", s.Name, s.Default, got, err)
		}
	}
}
