package config

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"github.com/sethvargo/go-envconfig"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/shared"
)

// Setting is one declared field of Config.
type Setting struct {
	// Name is the environment variable; Field the Config field.
	Name, Field string
	// Default applies when the variable is unset or empty.
	Default string
	// Allowed says what values are accepted.
	Allowed string
	// UsedBy lists entry points; "*" is all.
	UsedBy []string
	// Option names the deploy option that sets it, if any.
	Option string

	index    int
	kind     string // integer, duration, boolean or string
	rule     string // check tag
	min, max int64  // bounds; durations in nanoseconds
	check    func(string) error
}

// stringChecks are the rules a check tag may name.
var stringChecks = map[string]struct {
	allowed string
	check   func(string) error
}{
	"collection": {"a Firestore collection ID, unlike the other collections", func(v string) error {
		if err := wire.ValidateCounterID(v); err != nil {
			return fmt.Errorf("not a valid collection ID: %w", err)
		}
		return nil
	}},
	"counterCollection": {`a Firestore collection ID containing "counter" (it gets a TTL policy, which applies to every collection of that ID in the database), unlike the other collections`, func(v string) error {
		if err := wire.ValidateCounterID(v); err != nil {
			return fmt.Errorf("not a valid collection ID: %w", err)
		}
		if !shared.OursByName(v) {
			return errors.New(`must contain "counter": the collection gets a TTL policy, which would also delete an app's own documents in collections of that ID`)
		}
		return nil
	}},
	"counterIDPattern": {"an RE2 regular expression (matched against the whole ID)", func(v string) error {
		if _, err := regexp.Compile(wholeID(v)); err != nil {
			return fmt.Errorf("not an RE2 regular expression: %w", err)
		}
		return nil
	}},
	"extensionFolds": {"entries separated by blanks, each PATTERN:FIELD[,FIELD...]: a document path of IDs and {name} wildcards (a named collection in each odd position), and dotted field names", func(v string) error {
		_, err := extshards.ParseTargets(v)
		return err
	}},
	"origins": {"origins separated by spaces, each scheme://host[:port] as browsers send it (e.g. https://app.example.com http://localhost:5173): no path, no *", checkOrigins},
	"logLevel": {"DEBUG, INFO, WARNING (or WARN) or ERROR", func(v string) error {
		_, err := cloudlog.ParseLevel(v)
		return err
	}},
}

// settings are in Config's order; defaults is Default.
var settings, defaults = mustDeclare()

// Settings lists the settings in Config's order.
func Settings() []Setting { return append([]Setting(nil), settings...) }

// Default is the configuration with nothing set.
func Default() Config { return defaults }

// Load reads the environment over Default; the error names every invalid variable.
func Load() (Config, error) { return Parse(os.LookupEnv) }

// Parse is Load over lookup.
func Parse(lookup func(string) (string, bool)) (Config, error) {
	c := defaults
	fields := reflect.ValueOf(&c).Elem()
	var errs []error
	for _, s := range settings {
		v, ok := lookup(s.Name)
		if !ok || v == "" {
			continue
		}
		value, err := s.parse(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", s.Name, v, err))
			continue
		}
		fields.Field(s.index).Set(value)
	}
	if c.PerCallerLimit > 0 && !c.RequireIDToken {
		errs = append(errs, fmt.Errorf("PER_CALLER_LIMIT=%d needs REQUIRE_ID_TOKEN=true: the limit is per signed-in user", c.PerCallerLimit))
	}
	if c.RefuseAnonymousUsers && !c.RequireIDToken {
		errs = append(errs, errors.New("REFUSE_ANONYMOUS_USERS=true needs REQUIRE_ID_TOKEN=true: it is about the ID tokens of anonymous users"))
	}
	if c.RequireVerifiedEmail && !c.RequireIDToken {
		errs = append(errs, errors.New("REQUIRE_VERIFIED_EMAIL=true needs REQUIRE_ID_TOKEN=true: it is about the ID tokens' email addresses"))
	}
	if c.AppCheckReplayProtection && !c.RequireAppCheck {
		errs = append(errs, errors.New("APP_CHECK_REPLAY_PROTECTION=true needs REQUIRE_APP_CHECK=true: it consumes App Check tokens"))
	}
	if c.CheckRevokedTokens && !c.RequireIDToken {
		errs = append(errs, errors.New("CHECK_REVOKED_TOKENS=true needs REQUIRE_ID_TOKEN=true: it checks the users of ID tokens"))
	}
	errs = append(errs, distinctCollections(c)...)
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("invalid configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

// parse decodes v as the setting's field and checks it.
func (s Setting) parse(v string) (reflect.Value, error) {
	var one Config
	err := envconfig.ProcessWith(context.Background(), &envconfig.Config{
		Target: &one, Lookuper: envconfig.MapLookuper(map[string]string{s.Name: v})})
	value := reflect.New(reflect.TypeOf(one).Field(s.index).Type).Elem()
	value.Set(reflect.ValueOf(one).Field(s.index))
	switch s.kind {
	case "integer", "duration":
		if s.kind == "integer" { // decimal only
			var n int64
			if n, err = strconv.ParseInt(v, 10, 64); err == nil {
				value.SetInt(n)
			}
		}
		if err != nil || value.Int() < s.min || value.Int() > s.max {
			return value, errors.New("must be " + s.Allowed)
		}
	case "boolean":
		if err != nil {
			return value, errors.New("must be " + s.Allowed)
		}
	default:
		if err == nil && s.check != nil {
			err = s.check(v)
		}
	}
	return value, err
}

// distinctCollections reports collection settings naming the same collection.
func distinctCollections(c Config) []error {
	var errs []error
	var seen []Setting
	fields := reflect.ValueOf(c)
	for _, s := range settings {
		if s.rule != "collection" && s.rule != "counterCollection" {
			continue
		}
		for _, before := range seen {
			if id := fields.Field(s.index).String(); id == fields.Field(before.index).String() {
				errs = append(errs, fmt.Errorf("%s and %s must differ, both are %q", before.Name, s.Name, id))
			}
		}
		seen = append(seen, s)
	}
	return errs
}

// mustDeclare reads Config's tags; it panics on a bad tag.
func mustDeclare() ([]Setting, Config) {
	var c Config
	if err := envconfig.ProcessWith(context.Background(), &envconfig.Config{
		Target: &c, Lookuper: envconfig.MapLookuper(nil)}); err != nil {
		panic(fmt.Sprintf("config: the defaults do not decode: %v", err))
	}
	t := reflect.TypeOf(c)
	all := make([]Setting, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, def, _ := strings.Cut(f.Tag.Get("env"), ",")
		s := Setting{Name: name, Field: f.Name, index: i, Option: f.Tag.Get("option"),
			Default: strings.TrimPrefix(strings.TrimSpace(def), "default="), UsedBy: strings.Split(f.Tag.Get("usedBy"), ",")}
		var err error
		switch {
		case f.Type == reflect.TypeFor[time.Duration]():
			s.kind = "duration"
			s.min, s.max, err = bounds(f.Tag, func(b string) (int64, error) { d, err := time.ParseDuration(b); return int64(d), err })
			s.Allowed = "a Go duration (e.g. 500ms, 30s) of at least " + time.Duration(s.min).String()
			if s.max != math.MaxInt64 {
				s.Allowed += " and at most " + time.Duration(s.max).String()
			}
		case f.Type.Kind() == reflect.Int || f.Type.Kind() == reflect.Int64:
			s.kind = "integer"
			s.min, s.max, err = bounds(f.Tag, func(b string) (int64, error) { return strconv.ParseInt(b, 10, 64) })
			s.Allowed = fmt.Sprintf("an integer from %d to %d", s.min, s.max)
		case f.Type.Kind() == reflect.Bool:
			s.kind, s.Allowed = "boolean", "true or false"
		case f.Type.Kind() == reflect.String:
			s.kind, s.Allowed = "string", "any text"
			if s.rule = f.Tag.Get("check"); s.rule != "" {
				rule, ok := stringChecks[s.rule]
				if !ok {
					err = fmt.Errorf("unknown check %q", s.rule)
				}
				s.Allowed, s.check = rule.allowed, rule.check
			}
		default:
			err = fmt.Errorf("type %s is not supported", f.Type)
		}
		if err != nil {
			panic(fmt.Sprintf("config: field %s: %v", f.Name, err))
		}
		all[i] = s
	}
	return all, c
}

// bounds reads the min (default 0) and max (default unbounded) tags.
func bounds(tag reflect.StructTag, parse func(string) (int64, error)) (lo, hi int64, err error) {
	read := func(key string, absent int64) (int64, error) {
		b, ok := tag.Lookup(key)
		if !ok {
			return absent, nil
		}
		if n, ok := namedBounds[b]; ok {
			return n, nil
		}
		return parse(b)
	}
	if lo, err = read("min", 0); err == nil {
		hi, err = read("max", math.MaxInt64)
	}
	return lo, hi, err
}
