package shared

import (
	"strings"
	"testing"
	"time"
)

// env is a map-backed variable lookup for ParseConfig.
type env map[string]string

func (e env) lookup(name string) (string, bool) {
	v, ok := e[name]
	return v, ok
}

func TestDefaultConfig(t *testing.T) {
	want := Config{
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
		DedupeTTL:           192 * time.Hour,
	}
	if got := DefaultConfig(); got != want {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	tests := []struct {
		name string
		env  env
	}{
		{name: "nothing set", env: env{}},
		{name: "unrelated variables set", env: env{"HOME": "/root", "PORT": "8080"}},
		{name: "every variable empty", env: env{
			EnvProject:            "",
			EnvDatabase:           "",
			EnvCountersCollection: "",
			EnvRollupsCollection:  "",
			EnvDefaultNumShards:   "",
			EnvMaxDelta:           "",
			EnvShardCountCacheTTL: "",
			EnvLogLevel:           "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(tt.env.lookup)
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if want := DefaultConfig(); got != want {
				t.Errorf("ParseConfig = %+v, want DefaultConfig %+v", got, want)
			}
		})
	}
}

func TestParseConfigEachVariable(t *testing.T) {
	tests := []struct {
		name   string
		env    env
		modify func(*Config)
	}{
		{name: EnvProject, env: env{EnvProject: "my-proj"}, modify: func(c *Config) { c.Project = "my-proj" }},
		{name: EnvDatabase, env: env{EnvDatabase: "countersdb"}, modify: func(c *Config) { c.Database = "countersdb" }},
		{name: EnvCountersCollection, env: env{EnvCountersCollection: "ctrs"}, modify: func(c *Config) { c.Schema.Counters = "ctrs" }},
		{name: EnvRollupsCollection, env: env{EnvRollupsCollection: "sums"}, modify: func(c *Config) { c.Schema.Rollups = "sums" }},
		{name: EnvDefaultNumShards + " min", env: env{EnvDefaultNumShards: "1"}, modify: func(c *Config) { c.DefaultNumShards = 1 }},
		{name: EnvDefaultNumShards + " mid", env: env{EnvDefaultNumShards: "25"}, modify: func(c *Config) { c.DefaultNumShards = 25 }},
		{name: EnvDefaultNumShards + " max", env: env{EnvDefaultNumShards: "1000"}, modify: func(c *Config) { c.DefaultNumShards = 1000 }},
		{name: EnvMaxDelta + " one", env: env{EnvMaxDelta: "1"}, modify: func(c *Config) { c.MaxDelta = 1 }},
		{name: EnvMaxDelta + " 2^53", env: env{EnvMaxDelta: "9007199254740992"}, modify: func(c *Config) { c.MaxDelta = 1 << 53 }},
		{name: EnvShardCountCacheTTL + " 5m", env: env{EnvShardCountCacheTTL: "5m"}, modify: func(c *Config) { c.ShardCountCacheTTL = 5 * time.Minute }},
		{name: EnvShardCountCacheTTL + " 500ms", env: env{EnvShardCountCacheTTL: "500ms"}, modify: func(c *Config) { c.ShardCountCacheTTL = 500 * time.Millisecond }},
		{name: EnvShardCountCacheTTL + " zero", env: env{EnvShardCountCacheTTL: "0s"}, modify: func(c *Config) { c.ShardCountCacheTTL = 0 }},
		{name: EnvDedupeTTL + " 1h", env: env{EnvDedupeTTL: "1h"}, modify: func(c *Config) { c.DedupeTTL = time.Hour }},
		{name: EnvDedupeTTL + " 30 days", env: env{EnvDedupeTTL: "720h"}, modify: func(c *Config) { c.DedupeTTL = 720 * time.Hour }},
		{name: EnvRequireIDToken, env: env{EnvRequireIDToken: "true"}, modify: func(c *Config) { c.RequireIDToken = true }},
		{name: EnvRequireAppCheck, env: env{EnvRequireAppCheck: "1"}, modify: func(c *Config) { c.RequireAppCheck = true }},
		{name: EnvPerCallerLimit, env: env{EnvRequireIDToken: "true", EnvPerCallerLimit: "1"},
			modify: func(c *Config) { c.RequireIDToken, c.PerCallerLimit = true, 1 }},
		{name: EnvLogLevel + " DEBUG", env: env{EnvLogLevel: "DEBUG"}, modify: func(c *Config) { c.LogLevel = "DEBUG" }},
		{name: EnvLogLevel + " warn", env: env{EnvLogLevel: "warn"}, modify: func(c *Config) { c.LogLevel = "warn" }},
		{name: "all at once", env: env{
			EnvProject:            "p1",
			EnvDatabase:           "db1",
			EnvCountersCollection: "c1",
			EnvRollupsCollection:  "r1",
			EnvDefaultNumShards:   "7",
			EnvMaxDelta:           "42",
			EnvShardCountCacheTTL: "1m30s",
			EnvLogLevel:           "ERROR",
			EnvRequestTimeout:     "2500ms",
			EnvDedupeCollection:   "d1",
			EnvRollupInterval:     "250ms",
			EnvRollupLookback:     "15m",
			EnvGroupCommit:        "0",
			EnvDedupeTTL:          "36h",
		}, modify: func(c *Config) {
			*c = Config{
				Project:             "p1",
				Database:            "db1",
				Schema:              Schema{Counters: "c1", Rollups: "r1", Dedupe: "d1"},
				DefaultNumShards:    7,
				MaxDelta:            42,
				ShardCountCacheTTL:  90 * time.Second,
				LogLevel:            "ERROR",
				RequestTimeout:      2500 * time.Millisecond,
				RollupInterval:      250 * time.Millisecond,
				RollupSweepLookback: 15 * time.Minute,
				GroupCommitInterval: 0,
				DedupeTTL:           36 * time.Hour,
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := DefaultConfig()
			tt.modify(&want)
			got, err := ParseConfig(tt.env.lookup)
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if got != want {
				t.Errorf("ParseConfig = %+v, want %+v", got, want)
			}
		})
	}
}

func TestParseConfigInvalid(t *testing.T) {
	tests := []struct {
		name string
		env  env
		// wantMsgs must all appear in the error message: the variable, the bad value where it is
		// echoed, and what is allowed.
		wantMsgs []string
	}{
		{name: "num shards zero", env: env{EnvDefaultNumShards: "0"},
			wantMsgs: []string{EnvDefaultNumShards, `"0"`, "integer from 1 to 1000"}},
		{name: "num shards too many", env: env{EnvDefaultNumShards: "1001"},
			wantMsgs: []string{EnvDefaultNumShards, `"1001"`, "integer from 1 to 1000"}},
		{name: "num shards negative", env: env{EnvDefaultNumShards: "-3"},
			wantMsgs: []string{EnvDefaultNumShards, "integer from 1 to 1000"}},
		{name: "num shards not a number", env: env{EnvDefaultNumShards: "ten"},
			wantMsgs: []string{EnvDefaultNumShards, `"ten"`, "integer from 1 to 1000"}},
		{name: "num shards float", env: env{EnvDefaultNumShards: "2.5"},
			wantMsgs: []string{EnvDefaultNumShards, "integer from 1 to 1000"}},
		{name: "max delta zero", env: env{EnvMaxDelta: "0"},
			wantMsgs: []string{EnvMaxDelta, `"0"`, "integer from 1 to 9007199254740992"}},
		{name: "max delta above 2^53", env: env{EnvMaxDelta: "9007199254740993"},
			wantMsgs: []string{EnvMaxDelta, "integer from 1 to 9007199254740992"}},
		{name: "max delta overflow", env: env{EnvMaxDelta: "99999999999999999999"},
			wantMsgs: []string{EnvMaxDelta, "integer from 1 to 9007199254740992"}},
		{name: "max delta garbage", env: env{EnvMaxDelta: "lots"},
			wantMsgs: []string{EnvMaxDelta, `"lots"`, "integer"}},
		{name: "ttl no unit", env: env{EnvShardCountCacheTTL: "30"},
			wantMsgs: []string{EnvShardCountCacheTTL, `"30"`, "Go duration", "at least 0s"}},
		{name: "ttl negative", env: env{EnvShardCountCacheTTL: "-1s"},
			wantMsgs: []string{EnvShardCountCacheTTL, `"-1s"`, "Go duration", "at least 0s"}},
		{name: "ttl garbage", env: env{EnvShardCountCacheTTL: "soon"},
			wantMsgs: []string{EnvShardCountCacheTTL, "Go duration"}},
		{name: "dedupe ttl under an hour", env: env{EnvDedupeTTL: "59m"},
			wantMsgs: []string{EnvDedupeTTL, `"59m"`, "Go duration", "at least 1h0m0s"}},
		{name: "dedupe ttl in days", env: env{EnvDedupeTTL: "8d"},
			wantMsgs: []string{EnvDedupeTTL, `"8d"`, "Go duration"}},
		{name: "dedupe collection equals counters", env: env{EnvDedupeCollection: "counters"},
			wantMsgs: []string{EnvCountersCollection, EnvDedupeCollection, "must differ"}},
		{name: "require id token not a bool", env: env{EnvRequireIDToken: "yes please"},
			wantMsgs: []string{EnvRequireIDToken, `"yes please"`, "true or false"}},
		{name: "per caller limit without id tokens", env: env{EnvPerCallerLimit: "1"},
			wantMsgs: []string{EnvPerCallerLimit, EnvRequireIDToken, "per signed-in user"}},
		{name: "per caller limit negative", env: env{EnvRequireIDToken: "true", EnvPerCallerLimit: "-1"},
			wantMsgs: []string{EnvPerCallerLimit, `"-1"`, "integer from 0"}},
		{name: "log level unknown", env: env{EnvLogLevel: "LOUD"},
			wantMsgs: []string{EnvLogLevel, `"LOUD"`, "DEBUG, INFO, WARNING or ERROR"}},
		{name: "log level critical not accepted", env: env{EnvLogLevel: "CRITICAL"},
			wantMsgs: []string{EnvLogLevel, "DEBUG, INFO, WARNING or ERROR"}},
		{name: "counters collection with slash", env: env{EnvCountersCollection: "a/b"},
			wantMsgs: []string{EnvCountersCollection, `"a/b"`, "collection ID"}},
		{name: "rollups collection with slash", env: env{EnvRollupsCollection: "a/b"},
			wantMsgs: []string{EnvRollupsCollection, `"a/b"`, "collection ID"}},
		{name: "counters collection dot dot", env: env{EnvCountersCollection: ".."},
			wantMsgs: []string{EnvCountersCollection, "collection ID"}},
		{name: "rollups collection reserved", env: env{EnvRollupsCollection: "__r__"},
			wantMsgs: []string{EnvRollupsCollection, "collection ID"}},
		{name: "counters collection invalid UTF-8", env: env{EnvCountersCollection: "\xff"},
			wantMsgs: []string{EnvCountersCollection, "collection ID"}},
		{name: "collections equal", env: env{EnvCountersCollection: "same", EnvRollupsCollection: "same"},
			wantMsgs: []string{EnvCountersCollection, EnvRollupsCollection, "must differ", `"same"`}},
		{name: "rollups set to default counters name", env: env{EnvRollupsCollection: "counters"},
			wantMsgs: []string{"must differ", `"counters"`}},
		{name: "counters set to default rollups name", env: env{EnvCountersCollection: "rollups"},
			wantMsgs: []string{"must differ", `"rollups"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(tt.env.lookup)
			if err == nil {
				t.Fatalf("ParseConfig = %+v, nil; want error", got)
			}
			if got != (Config{}) {
				t.Errorf("ParseConfig returned %+v with an error, want zero Config", got)
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

func TestParseConfigReportsEveryInvalidVariable(t *testing.T) {
	e := env{
		EnvDefaultNumShards:   "0",
		EnvMaxDelta:           "x",
		EnvShardCountCacheTTL: "-5s",
		EnvLogLevel:           "LOUD",
		EnvCountersCollection: "a/b",
		EnvProject:            "fine",
	}
	_, err := ParseConfig(e.lookup)
	if err == nil {
		t.Fatal("ParseConfig = nil error, want every invalid variable reported")
	}
	msg := err.Error()
	for _, name := range []string{EnvDefaultNumShards, EnvMaxDelta, EnvShardCountCacheTTL, EnvLogLevel, EnvCountersCollection} {
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
		if strings.Contains(msg, EnvProject) {
			t.Errorf("error %q mentions %s, which was valid", msg, EnvProject)
		}
	})
}

func TestLoadConfigReadsEnvironment(t *testing.T) {
	for _, name := range []string{EnvProject, EnvDatabase, EnvCountersCollection, EnvRollupsCollection,
		EnvDefaultNumShards, EnvMaxDelta, EnvShardCountCacheTTL, EnvLogLevel} {
		t.Setenv(name, "")
	}
	t.Setenv(EnvDefaultNumShards, "3")
	t.Setenv(EnvRollupsCollection, "totals")
	got, err := LoadConfig()
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	want := DefaultConfig()
	want.DefaultNumShards = 3
	want.Schema.Rollups = "totals"
	if got != want {
		t.Errorf("LoadConfig = %+v, want %+v", got, want)
	}
}
