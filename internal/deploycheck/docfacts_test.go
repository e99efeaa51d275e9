package deploycheck_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shardcount/counters/functions/config"
	"github.com/shardcount/counters/internal/deploycheck"
	"github.com/shardcount/counters/internal/manifest"
)

// docFile is one file whose prose states facts of the deployment: its path (relative to the
// repository) and its text with every run of white space made one space, so that a phrase broken
// over lines is found whole.
type docFile struct {
	name, text string
}

// proseFiles are the files whose prose may count or list what is declared in Go or deployed: the
// README, docs/*.md, the deploy paths' READMEs, deploy.sh (its usage) and the Terraform module
// (its descriptions and comments).
func proseFiles(t *testing.T) []docFile {
	t.Helper()
	var names []string
	for _, pattern := range []string{"README.md", "docs/*.md", "scripts/README.md", "scripts/deploy.sh", "terraform/*.md", "terraform/*.tf"} {
		found, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, found...)
	}
	var files []docFile
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, name)
		files = append(files, docFile{name: rel, text: strings.Join(strings.Fields(string(data)), " ")})
	}
	if len(files) < 10 {
		t.Fatalf("found only %d files to check: %v", len(files), names)
	}
	return files
}

// numberWords are the counts the docs write in words.
var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}

// countedThings are the nouns a count in prose is checked for, singular and plural, and the thing
// they count (a key of declaredCounts).
var countedThings = []struct{ singular, plural, thing string }{
	{"HTTP function", "HTTP functions", "http function"},
	{"event function", "event functions", "event function"},
	{"service account", "service accounts", "service account"},
	{"account", "accounts", "service account"}, // "act as the three accounts"
	{"TTL policy", "TTL policies", "ttl policy"},
	{"topic", "topics", "topic"},
	{"composite index", "composite indexes", "composite index"},
}

// countPhrase matches a number word followed by one of countedThings (after "least-privilege",
// which the README puts between them). The longer nouns come first, so that "service accounts"
// wins over "accounts".
var countPhrase = func() *regexp.Regexp {
	var nouns []string
	for _, c := range countedThings {
		nouns = append(nouns, regexp.QuoteMeta(c.plural), regexp.QuoteMeta(c.singular))
	}
	return regexp.MustCompile(`(?i)\b(` + strings.Join(numberWords, "|") + `) (?:least-privilege )?(` + strings.Join(nouns, "|") + `)\b`)
}()

// declaredCounts are how many of each of countedThings the deployment has, from the Go declarations
// and deploy.sh's dry run: the accepted counts, the default deployment's and with every opt-in
// function (the same where opt-ins change nothing).
func declaredCounts(t *testing.T) map[string][]int {
	t.Helper()
	count := func(keep func(manifest.Function) bool) []int {
		all, byDefault := 0, 0
		for _, f := range manifest.Deployed() {
			if keep(f) {
				all++
				if !f.OptIn {
					byDefault++
				}
			}
		}
		return []int{byDefault, all}
	}
	commands, err := deploycheck.DryRun(script, "--project", "p", "--region", "r")
	if err != nil {
		t.Fatal(err)
	}
	accounts := 0
	for _, words := range commands {
		if len(words) > 4 && strings.Join(words[:4], " ") == "gcloud iam service-accounts create" {
			accounts++
		}
	}
	ttl := 0
	for _, f := range manifest.FieldSettings() {
		if f.TTL {
			ttl++
		}
	}
	return map[string][]int{
		"http function":   count(func(f manifest.Function) bool { return f.Trigger.EventType == "" }),
		"event function":  count(func(f manifest.Function) bool { return f.Trigger.EventType != "" }),
		"service account": {accounts},
		"ttl policy":      {ttl},
		"topic":           {len(manifest.Topics())},
		"composite index": {len(manifest.CompositeIndexes())},
	}
}

// TestProseCountsMatchDeclarations: wherever the docs, deploy.sh's usage or the Terraform module
// write a count in words of HTTP functions, event functions, service accounts (or accounts), TTL
// policies, topics or composite indexes ("the four HTTP functions", "three least-privilege service accounts"), it is
// the count declared in Go (manifest.Deployed, FieldSettings, Topics, CompositeIndexes) or created by
// deploy.sh's dry run (service accounts).
func TestProseCountsMatchDeclarations(t *testing.T) {
	requireBash(t)
	want := declaredCounts(t)
	if want["service account"][0] == 0 {
		t.Fatal("deploy.sh --dry-run creates no service account: the dry run's output changed, fix this test")
	}
	things := map[string]string{}
	for _, c := range countedThings {
		things[strings.ToLower(c.plural)], things[strings.ToLower(c.singular)] = c.thing, c.thing
	}
	checked := 0
	for _, f := range proseFiles(t) {
		for _, m := range countPhrase.FindAllStringSubmatch(f.text, -1) {
			n, thing := slices.Index(numberWords, strings.ToLower(m[1])), things[strings.ToLower(m[2])]
			checked++
			if !slices.Contains(want[thing], n) {
				t.Errorf("%s: %q, but the deployment has %s", f.name, m[0], counts(want[thing], thing))
			}
		}
	}
	if checked == 0 {
		t.Error("no count of deployed things found in the docs: the phrase matching is broken")
	}
	t.Logf("checked %d counts in prose", checked)
}

func counts(ns []int, thing string) string {
	var s []string
	for _, n := range slices.Compact(ns) {
		s = append(s, fmt.Sprint(n))
	}
	return strings.Join(s, " (by default) or ") + " of " + thing
}

// invokerClauseEnd ends the clause that says which functions an invoker list reaches: the end of
// the sentence or clause, or the other list.
var invokerClauseEnd = regexp.MustCompile(`; |\. [A-Z]|admin|--|http_invokers`)

// invokerClause returns the clause that follows the option that ends at end in text.
func invokerClause(text string, end int) string {
	clause := text[end:min(end+200, len(text))]
	if i := invokerClauseEnd.FindStringIndex(clause); i != nil {
		clause = clause[:i[0]]
	}
	return clause
}

// TestProseNamesTheFunctionsInvokersReach: wherever the docs, deploy.sh's usage or the Terraform
// module say which functions an invoker list lets a member call, they name exactly the functions it
// reaches (manifest.Deployed): --invoker and http_invokers the HTTP functions that are not admin
// functions, --admin-invoker and admin_invokers the admin functions; and no other entry point.
func TestProseNamesTheFunctionsInvokersReach(t *testing.T) {
	var http, admin []string
	for _, f := range manifest.Deployed() {
		switch {
		case f.Trigger.EventType == "" && f.Admin:
			admin = append(admin, f.EntryPoint)
		case f.Trigger.EventType == "":
			http = append(http, f.EntryPoint)
		}
	}
	lists := []struct {
		option  *regexp.Regexp
		reached []string
		least   int // descriptions known today, so that a broken match fails
	}{
		{regexp.MustCompile(`--invoker\b|\bhttp_invokers\b`), http, 4},         // operations.md (both), deploy.sh, variables.tf
		{regexp.MustCompile(`--admin-invoker\b|\badmin_invokers\b`), admin, 3}, // operations.md (both), deploy.sh
	}
	names := regexp.MustCompile(`\b(` + strings.Join(manifest.EntryPoints, "|") + `)\b`)
	files := proseFiles(t)
	for _, list := range lists {
		want := slices.Sorted(slices.Values(list.reached))
		checked := 0
		for _, f := range files {
			for _, at := range list.option.FindAllStringIndex(f.text, -1) {
				option, clause := f.text[at[0]:at[1]], invokerClause(f.text, at[1])
				var named []string
				for _, n := range names.FindAllString(clause, -1) {
					if !slices.Contains(named, n) {
						named = append(named, n)
					}
				}
				if len(named) == 0 {
					continue // the option given, not described
				}
				checked++
				if slices.Sort(named); !slices.Equal(named, want) {
					t.Errorf("%s: %q names %v; %s reaches %v", f.name, option+clause, named, option, want)
				}
			}
		}
		if checked < list.least {
			t.Errorf("%v: found %d descriptions, want at least %d: the phrase matching is broken", list.option, checked, list.least)
		}
	}
}

// fieldLists match lists of field settings in prose: "TTL policies on `a.f` and `b.f`", and
// "single-field index settings on `a.f`, ..., and `c.g`".
var (
	ttlList   = regexp.MustCompile("TTL policies on ((?:`[^`]+`(?:, and |, | and )?)+)")
	indexList = regexp.MustCompile("single-field index settings on ((?:`[^`]+`(?:, and |, | and )?)+)")
)

// TestProseListsEveryFieldSetting: wherever the docs list the TTL policies a deployment sets ("TTL
// policies on `counter_dedupe.expires_at` and ..."), or its single-field index settings, they list
// exactly the declared ones (manifest.FieldSettings: those with TTL, and all), by the collections'
// default names.
func TestProseListsEveryFieldSetting(t *testing.T) {
	defaults := map[string]string{}
	for _, s := range config.Settings() {
		defaults[s.Name] = s.Default
	}
	var ttl, all []string
	for _, f := range manifest.FieldSettings() {
		collection := f.Collection
		if d, ok := defaults[collection]; ok {
			collection = d
		}
		all = append(all, collection+"."+f.Field)
		if f.TTL {
			ttl = append(ttl, collection+"."+f.Field)
		}
	}
	files := proseFiles(t)
	for _, list := range []struct {
		phrase *regexp.Regexp
		want   []string
	}{{ttlList, ttl}, {indexList, all}} {
		slices.Sort(list.want)
		checked := 0
		for _, f := range files {
			for _, m := range list.phrase.FindAllStringSubmatch(f.text, -1) {
				checked++
				if listed := quotedNames(m[1]); !slices.Equal(listed, list.want) {
					t.Errorf("%s: %q lists %v; declared: %v", f.name, m[0], listed, list.want)
				}
			}
		}
		if checked == 0 {
			t.Errorf("no list matching %v found in the docs: the phrase matching is broken", list.phrase)
		}
	}
}

// tableFirstCells returns the first cells of the Markdown table that follows header in file, with
// their backticks and any text after the first backticked name (" (opt-in)") removed.
func tableFirstCells(t *testing.T, file, header string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), header+"\n")
	if !ok {
		t.Fatalf("%s: no table with the header %q", file, header)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var cells []string
	for i, line := range strings.Split(table, "\n") {
		if i == 0 { // the |---| line
			continue
		}
		first := strings.TrimSpace(strings.Split(strings.Trim(line, "|"), "|")[0])
		if m := regexp.MustCompile("^`([^`]+)`").FindStringSubmatch(first); m != nil {
			first = m[1]
		}
		cells = append(cells, first)
	}
	return cells
}

// TestFunctionTablesListEveryFunction: the README's table of functions has a row for every entry
// point deployed by default (opt-in ones may be left to their own page), with the trigger declared
// (HTTP, the Pub/Sub topic, the Firestore document pattern, or for a per-source function
// COUNTER_SOURCES, whose patterns it is deployed for), and operations.md's "Production
// limits" says why for every deployed function; neither lists one that is not declared.
func TestFunctionTablesListEveryFunction(t *testing.T) {
	schema := config.Default().Schema()
	readme := map[string]bool{}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := regexp.MustCompile("^\\| `(\\w+)` \\| ([^|]+) \\|").FindStringSubmatch(line); m != nil {
			rows[m[1]] = m[2]
		}
	}
	for _, name := range tableFirstCells(t, "README.md", "| entry point | trigger | what it does |") {
		readme[name] = true
		f, ok := manifest.DeployedFunction(name)
		if !ok {
			t.Errorf("README.md lists %s, which is not a deployed entry point", name)
			continue
		}
		trigger, want := rows[name], "HTTP"
		switch {
		case f.PerSource: // its patterns are the declared ones
			want = "`COUNTER_SOURCES`"
		case f.Trigger.Topic != "":
			want = "`" + f.Trigger.Topic + "`"
		case f.Trigger.Document != "":
			want = "`" + f.Trigger.DocumentPattern(schema) + "`"
		}
		if !strings.Contains(trigger, want) {
			t.Errorf("README.md: %s's trigger is %q, which does not name %s", name, trigger, want)
		}
	}
	limits := map[string]bool{}
	for _, name := range tableFirstCells(t, "docs/operations.md", "| function | why |") {
		limits[name] = true
		if !slices.ContainsFunc(manifest.Deployed(), func(f manifest.Function) bool { return f.Name == name }) {
			t.Errorf("docs/operations.md (production limits) lists %s, which is not a deployed function", name)
		}
	}
	for _, f := range manifest.Deployed() {
		if !readme[f.EntryPoint] && !f.OptIn {
			t.Errorf("README.md's table of functions does not list %s", f.EntryPoint)
		}
		if !limits[f.Name] {
			t.Errorf("docs/operations.md (production limits) does not say why %s's limits are what they are", f.Name)
		}
	}
}

// collectionList matches a list of two or more collection settings in prose ("`COUNTERS_COLLECTION`,
// `ROLLUPS_COLLECTION` or ..."); defaultsList one of their defaults ("The collection names
// `counters`, ... are settings").
var (
	collectionList = regexp.MustCompile("`[A-Z_]+_COLLECTION`(?:(?:, and |, or |, | or | and )`[A-Z_]+_COLLECTION`)+")
	defaultsList   = regexp.MustCompile("collection names ((?:`[^`]+`(?:, and |, | and )?)+) are settings")
)

// TestProseListsEveryCollectionSetting: wherever the docs list the collection settings (functions/
// config's *_COLLECTION), or their defaults as "the collection names ... are settings", and in
// existing-app.md's table of collection names, they list every one, with its default.
func TestProseListsEveryCollectionSetting(t *testing.T) {
	var names, defaults []string
	defaultOf := map[string]string{}
	for _, s := range config.Settings() {
		if strings.HasSuffix(s.Name, "_COLLECTION") {
			names, defaults = append(names, s.Name), append(defaults, s.Default)
			defaultOf[s.Name] = s.Default
		}
	}
	slices.Sort(names)
	slices.Sort(defaults)
	checked := 0
	for _, f := range proseFiles(t) {
		for _, list := range []struct {
			phrase *regexp.Regexp
			want   []string
		}{{collectionList, names}, {defaultsList, defaults}} {
			for _, m := range list.phrase.FindAllString(f.text, -1) {
				checked++
				if got := quotedNames(m); !slices.Equal(got, list.want) {
					t.Errorf("%s: %q lists %v; the collection settings are %v", f.name, m, got, list.want)
				}
			}
		}
	}
	if checked < 2 { // api.md's rules section, design.md's data model
		t.Errorf("found %d lists of collection settings, want at least 2: the phrase matching is broken", checked)
	}
	data, err := os.ReadFile(existingAppPage)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+_COLLECTION)` \\| `([^`]*)` \\|").FindAllStringSubmatch(string(data), -1) {
		rows[m[1]] = m[2]
	}
	for name, def := range defaultOf {
		if got, ok := rows[name]; !ok || got != def {
			t.Errorf("docs/existing-app.md's table of collection names: %s is %q (listed %v), declared default %q", name, got, ok, def)
		}
	}
	for name := range rows {
		if _, ok := defaultOf[name]; !ok {
			t.Errorf("docs/existing-app.md's table of collection names lists %s, which is not a setting", name)
		}
	}
}

// quotedNames returns the names in backticks in text, sorted.
func quotedNames(text string) []string {
	var names []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	slices.Sort(names)
	return names
}

// TestUpgradeStepsNameRefsTheRepositoryHolds: every git ref that operations.md's upgrade and
// rollback steps check out or compare exists in this repository: a release named through the
// documented release function resolves, run in bash, to a commit whose version/version.go is that
// release, and any other ref resolves to a commit.
func TestUpgradeStepsNameRefsTheRepositoryHolds(t *testing.T) {
	requireBash(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## Upgrading and rolling back\n")
	section, _, _ = strings.Cut(section, "\n## ")
	definition := regexp.MustCompile(`(?m)^release\(\) \{.*\}$`).FindString(section)
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	releases := 0
	for _, m := range regexp.MustCompile("git (?:checkout|diff) ([^`\n]+)").FindAllStringSubmatch(section, -1) {
		for _, arg := range regexp.MustCompile(`"\$\(release [^)]*\)"|\S+`).FindAllString(m[1], -1) {
			if version, ok := strings.CutPrefix(strings.Trim(arg, `"$()`), "release "); ok {
				releases++
				bash := exec.Command("bash", "-c", definition+"\nrelease "+version)
				bash.Dir = root
				out, err := bash.Output()
				commit := strings.TrimSpace(string(out))
				if err != nil || commit == "" {
					t.Errorf("release %s: no commit (%v)", version, err)
					continue
				}
				file, err := git("show", commit+":version/version.go")
				if err != nil || !strings.Contains(file, `Version = "`+version+`"`) {
					t.Errorf("release %s is commit %s, whose version/version.go does not say it (%v)", version, commit, err)
				}
				continue
			}
			if strings.HasPrefix(arg, "-") || strings.Contains(arg, ".md") {
				continue
			}
			if _, err := git("rev-parse", "--verify", "--quiet", arg+"^{commit}"); err != nil {
				t.Errorf("operations.md runs %s: %s is no commit of this repository (git tag lists %s)", m[0], arg, must(git("tag")))
			}
		}
	}
	if releases == 0 || definition == "" {
		t.Errorf("the steps check out %d releases with the release function (defined: %t)", releases, definition != "")
	}
}

func must(s string, _ error) string { return s }

// TestBillCitesEveryPrice: operations.md's bill takes every price from its prices table, where each
// row has a free tier of its own and cites a Google pricing page; every dollar price per unit in the
// section's prose or its monthly table (a "per" after the amount) is one of the table's; the monthly
// bill has a free tiers row and an incident's log volume.
func TestBillCitesEveryPrice(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## What it costs per million increments\n")
	_, table, ok := strings.Cut(section, "| service | price | free tier, a month | source |\n")
	if !ok {
		t.Fatal(`operations.md, "What it costs": no prices table`)
	}
	table, rest, _ := strings.Cut(table, "\n\n")
	price := regexp.MustCompile(`\$[0-9][0-9.,]*(?: per)`)
	cited := map[string]bool{}
	for _, row := range strings.Split(table, "\n")[1:] {
		cells := strings.Split(strings.Trim(row, "|"), "|")
		if len(cells) != 4 || strings.TrimSpace(cells[2]) == "" || !strings.HasPrefix(strings.TrimSpace(cells[3]), "https://cloud.google.com/") {
			t.Errorf("prices table row %q: want a price, a free tier and a https://cloud.google.com/ source", row)
			continue
		}
		for _, p := range price.FindAllString(cells[1], -1) {
			cited[p] = true
		}
	}
	for _, p := range price.FindAllString(rest, -1) {
		if !cited[p] {
			t.Errorf(`operations.md, "What it costs": %q is a price the prices table does not cite`, p)
		}
	}
	for _, row := range []string{"\n| free tiers", "5xx storm"} {
		if !strings.Contains(rest, row) {
			t.Errorf(`operations.md's monthly bill has no row %q`, strings.TrimSpace(row))
		}
	}
}
