package sources_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/shardcount/counters/extshards"
	"github.com/shardcount/counters/sources"
)

func TestDeclarationsThatCannotWorkAreRefusedNamingEntryAndRule(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"our own collections", `[{"documents": "counters/{c}/shards/{s}", "counter": "x-{c}"}]`, `collection "counters" is one of the counters' own`},
		{"a counter ID with a wildcard the pattern lacks", `[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{user}"}]`, "uses {user}, which the documents pattern does not have"},
		{"a counter over several collections", `[{"documents": "posts/{post}/likes/{like}", "counter": "likes"}]`, "must use {post}"},
		{"a sum that is no field path", `[{"documents": "orders/{o}", "counter": "revenue", "sum": "a..b"}]`, "sum: \"a..b\" is not a field path"},
		{"a mirror into counted documents", `[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{post}", "mirror": "posts/{post}.likes"},
		  {"documents": "posts/{post}", "counter": "posts"}]`, "is a document that entry 1 counts"},
		{"a multi-segment wildcard", `[{"documents": "users/{u=**}/likes/{l}", "counter": "x-{u}"}]`, "multi-segment wildcards"},
		{"a wildcard collection", `[{"documents": "{c}/{d}", "counter": "x-{c}"}]`, "collection IDs must be literal"},
		{"a where value that is a map", `[{"documents": "orders/{o}", "counter": "paid", "where": {"status": {"a": 1}}}]`, `where "status" ==: only a string`},
		{"an unknown operator", `[{"documents": "orders/{o}", "counter": "n", "where": [["status", "=", "paid"]]}]`, `where "status" =: unknown operator`},
		{"a range over a boolean", `[{"documents": "orders/{o}", "counter": "n", "where": [["paid", ">", false]]}]`, `a range compares a number or a string`},
		{"an in of 31 values", `[{"documents": "orders/{o}", "counter": "n", "where": [["n", "in", [` + strings.Repeat("1,", 30) + `1]]]}]`, `want a list of 1 to 30 values`},
		{"two array filters", `[{"documents": "orders/{o}", "counter": "n", "where": [["tags", "array-contains", "a"], ["more", "array-contains", "b"]]}]`, `at most one array-contains`},
		{"in beside not-in", `[{"documents": "orders/{o}", "counter": "n", "where": [["a", "in", [1]], ["b", "not-in", [2]]]}]`, `at most one in, not-in or array-contains-any`},
		{"not-in beside !=", `[{"documents": "orders/{o}", "counter": "n", "where": [["a", "!=", 1], ["b", "not-in", [2]]]}]`, `at most one != or not-in`},
		{"two !=", `[{"documents": "orders/{o}", "counter": "n", "where": [["a", "!=", 1], ["b", "!=", 2]]}]`, `at most one != or not-in`},
		{"null in a list", `[{"documents": "orders/{o}", "counter": "n", "where": [["a", "in", [1, null]]]}]`, `null is compared with == or != only`},
		{"a where entry that is no triple", `[{"documents": "orders/{o}", "counter": "n", "where": [["a", "=="]]}]`, `where[0]: want [field, operator, value]`},
		{"an unknown window", `[{"documents": "orders/{o}", "counter": "n", "windows": ["week"]}]`, `unknown window "week"`},
		{"two entries, one counter", `[{"documents": "a/{x}", "counter": "n"}, {"documents": "b/{x}", "counter": "n"}]`, "one counter counts one declaration"},
		{"an unknown field", `[{"documents": "a/{x}", "counter": "n", "count": "x"}]`, `unknown field "count"`},
		{"two mirrors into one field", `[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{post}", "mirror": "posts/{post}.stats"},
		  {"documents": "posts/{post}/saves/{save}", "counter": "saves-{post}", "mirror": "posts/{post}.stats.saves"}]`, "writes the field of entry 1's mirror"},
		{"a counter_id_pattern that is no regular expression", `[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{post}", "counter_id_pattern": "likes-(["}]`, "counter_id_pattern: error parsing regexp"},
		{"a scale without a sum", `[{"documents": "orders/{o}", "counter": "n", "scale": 2}]`, "scale: 2; a scale of 0 to 9 decimals goes with a sum"},
		{"a scale of 10", `[{"documents": "orders/{o}", "counter": "n", "sum": "amount", "scale": 10}]`, "scale: 10"},
		{"templates sharing IDs", `[{"documents": "posts/{post}/likes/{l}", "counter": "likes-{post}"}, {"documents": "shops/{shop}/likes/{l}", "counter": "likes-shop-{shop}"}]`, `can build the IDs entry 1's "likes-shop-{shop}" builds`},
		{"templates sharing IDs by their ends", `[{"documents": "a/{x}/n/{l}", "counter": "{x}-n"}, {"documents": "b/{z}/n/{l}", "counter": "n-{z}"}]`, "can build the IDs"},
		{"two wildcards run together", `[{"documents": "a/{x}/b/{y}/c/{z}", "counter": "k-{x}{y}"}]`, "between {x} and {y} put a character other than letters"},
		{"two wildcards parted by letters", `[{"documents": "a/{x}/b/{y}/c/{z}", "counter": "k{x}and{y}"}]`, "between {x} and {y}"},
		{"an unknown read", `[{"documents": "orders/{o}", "counter": "n", "read": "owner"}]`, `read: "owner"; want "public"`},
		{"a closed counter in a top list", `[{"documents": "orders/{o}", "counter": "n", "read": "none", "group": "g"}]`, `top lists are readable by clients`},
		{"a counter field that is no field path", `[{"documents": "likes/{like}", "counter": "likes-{field:a..b}"}]`, `{field:a..b}: "a..b" is not a field path`},
		{"two counter fields run together", `[{"documents": "votes/{v}", "counter": "poll-{field:poll}{field:choice}"}]`, "put a character other than letters"},
		{"a field template beside a path template", `[{"documents": "likes/{like}", "counter": "likes-{field:postId}"}, {"documents": "posts/{post}/likes/{l}", "counter": "likes-{post}"}]`, "can build the IDs"},
		{"a mirror by a field the counter lacks", `[{"documents": "likes/{like}", "counter": "likes-{field:postId}", "mirror": "posts/{field:post}.likes"}]`, `uses {field:post}`},
		{"a reserved counter ID", `[{"documents": "posts/{post}/likes/{like}", "counter": "_counters_{post}"}]`, `reserved for the deployment's own counters`},
		{"a probe in a collection counted whole", `[{"documents": "likes/{like}", "counter": "likes", "canary": true}]`, "probe document likes/_counters_canary would be one of the documents entry 0 counts whole"},
		{"a probe under a literal document", `[{"documents": "posts/featured/likes/{l}", "counter": "featured", "canary": true}]`, "would be one of the documents entry 0 counts"},
		{"a probe another entry counts whole", `[{"documents": "votes/{v}", "counter": "yes", "where": {"choice": "yes"}, "canary": true}, {"documents": "votes/{v}", "counter": "votes"}]`, "would be one of the documents entry 1 counts"},
	} {
		_, err := sources.Parse([]byte(c.file), schema)
		if err == nil || !strings.Contains(err.Error(), "entry ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming the entry and %q", c.name, err, c.want)
		}
	}
	if _, err := sources.Parse([]byte(`[{"documents": "posts/{post}/likes/{l}", "counter": "likes-{post}"}, {"documents": "posts/{post}/saves/{s}", "counter": "saves-{post}"},
	  {"documents": "a/{x}/b/{y}/c/{z}", "counter": "k-{x}-{y}"}]`), schema); err != nil {
		t.Errorf("templates that never share an ID: %v", err)
	}
	set, err := sources.Parse([]byte(`[{"documents": "posts/{post}/likes/{like}", "counter": "likes-{post}", "mirror": "posts/{post}.likes", "where": {"ok": true, "n": 1.5}},
	  {"documents": "shops/{shop}/orders/{o}", "counter": "revenue-{shop}", "sum": "totals.amount", "group": "shops", "windows": ["day"]}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Patterns(); len(got) != 2 {
		t.Errorf("patterns %q, want two", got)
	}
	folds, err := extshards.ParseTargets("pages/{page}:visits posts/{post}:likes,stats.views")
	if err != nil {
		t.Fatal(err)
	}
	if err := set.CheckFolds(folds); err == nil || !strings.Contains(err.Error(), "EXTENSION_FOLDS posts/{post}:likes") {
		t.Errorf("a mirror into a folded field: %v, want it refused naming the fold", err)
	}
	if folds, _ = extshards.ParseTargets("posts/{post}:saves"); set.CheckFolds(folds) != nil {
		t.Errorf("a mirror beside a fold of another field: %v, want it accepted", set.CheckFolds(folds))
	}
}

// TestUnreadableIDsMatchExactlyTheClosedCounters: the expressions the rules close are those of the
// "read": "none" declarations, matching the IDs their templates build and no other.
func TestUnreadableIDsMatchExactlyTheClosedCounters(t *testing.T) {
	set, err := sources.Parse([]byte(`[{"documents": "shops/{shop}/orders/{o}", "counter": "revenue.{shop}", "sum": "amount", "read": "none"},
	  {"documents": "a/{x}/b/{y}/c/{z}", "counter": "k'{x}-{y}", "read": "none"},
	  {"documents": "posts/{post}/likes/{l}", "counter": "likes-{post}", "read": "public"}]`), schema)
	if err != nil {
		t.Fatal(err)
	}
	exprs := set.UnreadableIDs()
	if len(exprs) != 2 {
		t.Fatalf("expressions %q, want the two closed declarations'", exprs)
	}
	for _, c := range []struct {
		expr, id string
		match    bool
	}{{exprs[0], "revenue.s1", true}, {exprs[0], "revenueXs1", false}, {exprs[0], "revenue.", false},
		{exprs[1], "k'a%2D1-b", true}, {exprs[1], "k'a-b-c", false}, {exprs[1], "likes-p1", false}} {
		if got := regexp.MustCompile(`^(?:` + c.expr + `)$`).MatchString(c.id); got != c.match {
			t.Errorf("%q matches %q: %v, want %v", c.expr, c.id, got, c.match)
		}
	}
}
