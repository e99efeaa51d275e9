package quickstart

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxReadmeLines is how long the README may be: a newcomer reads it in minutes; the rest is in docs/.
const maxReadmeLines = 300

func TestReadmeIsShort(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	if n := strings.Count(strings.TrimSuffix(readme, "\n"), "\n") + 1; n > maxReadmeLines {
		t.Errorf("README.md has %d lines, want at most %d: move detail to docs/", n, maxReadmeLines)
	}
}

// maxDocWords bounds README.md plus docs/*.md (words as wc -w counts them): a newcomer reads them once.
const maxDocWords = 25000

// maxExistingAppWords bounds the path "add counters to my existing app": README.md, existing-app.md
// and what it links to (a section when the link names one, else the page).
const maxExistingAppWords = 5000

func TestDocsStayWithinTheirWords(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, page := range append(pages, filepath.Join(repoRoot, "README.md")) {
		name, _ := filepath.Rel(repoRoot, page)
		total += len(strings.Fields(readRepoFile(t, name)))
	}
	if total > maxDocWords {
		t.Errorf("README.md and docs/*.md hold %d words, want at most %d: say each fact once, tersely, and link to it", total, maxDocWords)
	}
	path := len(strings.Fields(readRepoFile(t, "README.md")))
	guide := readRepoFile(t, "docs/existing-app.md")
	path += len(strings.Fields(guide))
	read := map[string]bool{}
	for _, l := range relativeLinks(guide) {
		if l.path == "" || !strings.HasSuffix(l.path, ".md") || read[l.path+"#"+l.anchor] || read[l.path+"#"] {
			continue
		}
		read[l.path+"#"+l.anchor] = true
		page := readRepoFile(t, filepath.ToSlash(filepath.Join("docs", l.path)))
		if l.anchor != "" {
			page = section(page, l.anchor)
		}
		path += len(strings.Fields(page))
	}
	t.Logf("%d words in all; the existing-app path %d", total, path)
	if path > maxExistingAppWords {
		t.Errorf("README.md, docs/existing-app.md and the sections it links to hold %d words, want at most %d", path, maxExistingAppWords)
	}
}

// section is the text of md's heading with anchor, up to the next heading of its level or above.
func section(md, anchor string) string {
	lines := strings.Split(md, "\n")
	start, level, fenced := -1, 0, false
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		hashes := len(line) - len(strings.TrimLeft(line, "#"))
		if fenced || hashes == 0 || hashes > 6 || !strings.HasPrefix(line[hashes:], " ") {
			continue
		}
		if start >= 0 && hashes <= level {
			return strings.Join(lines[start:i], "\n")
		}
		if start < 0 && headingAnchors(line)[anchor] {
			start, level = i, hashes
		}
	}
	if start < 0 {
		return ""
	}
	return strings.Join(lines[start:], "\n")
}

// TestRelativeLinksResolve checks every relative link of README.md and docs/*.md: the file it names
// exists and, for a Markdown file, so does the heading its anchor names.
func TestRelativeLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(repoRoot, "README.md"))
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, page)
		for _, l := range relativeLinks(string(data)) {
			target := page
			if l.path != "" {
				target = filepath.Join(filepath.Dir(page), filepath.FromSlash(l.path))
			}
			checked++
			linked, err := os.ReadFile(target)
			if err != nil {
				t.Errorf("%s line %d: link to %q: no such file", name, l.line, l.path)
				continue
			}
			if l.anchor != "" && strings.HasSuffix(target, ".md") && !headingAnchors(string(linked))[l.anchor] {
				t.Errorf("%s line %d: link to %s#%s: no such heading", name, l.line, l.path, l.anchor)
			}
		}
	}
	if checked == 0 {
		t.Error("no relative link found: the link extraction is broken")
	}
}

// TestQuickStartShowsAnswers checks the quick start's shape without a stack: commands, and answers
// that are JSON objects.
func TestQuickStartShowsAnswers(t *testing.T) {
	steps, err := quickStartSteps(readRepoFile(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	answers := 0
	for _, s := range steps {
		if s.want == "" {
			continue
		}
		answers++
		if _, err := decodeObject(s.want); err != nil {
			t.Errorf("README.md line %d: the answer shown is not a JSON object: %v", s.line, err)
		}
	}
	if answers == 0 {
		t.Error("the quick start shows no answer to check")
	}
}

func TestQuickStartStepsParse(t *testing.T) {
	readme := "# T\n\n## Quick start\n\ntext\n\n```bash\n# a comment\ncurl -s a \\\n  -d b\n# {\"x\":1}\n\nmake c\n```\n"
	steps, err := quickStartSteps(readme)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].command != "curl -s a -d b" || steps[0].want != `{"x":1}` ||
		steps[0].line != 9 || steps[1].command != "make c" || steps[1].want != "" {
		t.Errorf("quickStartSteps = %+v", steps)
	}
	for _, bad := range []string{"# T\n", "## Quick start\n\n## Next\n", "## Quick start\n```bash\n```\n",
		"## Quick start\n```bash\n# {\"x\":1}\n```\n", "## Quick start\n```bash\nmake c\n"} {
		if _, err := quickStartSteps(bad); err == nil {
			t.Errorf("quickStartSteps(%q) gave no error", bad)
		}
	}
}

func TestHeadingAnchors(t *testing.T) {
	md := "# Deploy and operate\n## With gcloud: `scripts/deploy.sh`\n```sh\n# not a heading\n```\n" +
		"## Pub/Sub messages\n## Notes\n## Notes\n### [Linked](x.md) heading\n"
	got := headingAnchors(md)
	for _, want := range []string{"deploy-and-operate", "with-gcloud-scriptsdeploysh", "pubsub-messages", "notes",
		"notes-1", "linked-heading"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a code block became a heading")
	}
}

func TestRelativeLinks(t *testing.T) {
	md := "See [a](docs/a.md#x), ![p](docs/p.png), [web](https://example.com), [here](#y), `[no](z.md)`.\n" +
		"```\n[no](code.md)\n```\n"
	got := relativeLinks(md)
	want := []link{{path: "docs/a.md", anchor: "x", line: 1}, {path: "docs/p.png", line: 1}, {anchor: "y", line: 1}}
	if len(got) != len(want) {
		t.Fatalf("relativeLinks = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("relativeLinks[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestCheckAnswer(t *testing.T) {
	want := `{"counter":"likes","count":3,"shard":7,"rollup":{"count":3,"updated_at":"2026-11-21T06:00:12Z"}}`
	for _, tc := range []struct {
		out, want string
		ok        bool
	}{
		{`{"counter":"likes","count":3,"shard":2,"rollup":{"count":3,"updated_at":"2030-01-01T00:00:00Z"}}`, want, true},
		{`{"counter":"likes","count":4,"shard":7,"rollup":{"count":3,"updated_at":"2026-11-21T06:00:12Z"}}`, want, false},
		{`{"counter":"likes","count":3,"shard":7,"rollup":null}`, want, false},
		{`{"counter":"likes","count":3,"shard":"7","rollup":{"count":3,"updated_at":"x"}}`, want, false},
		{`{"counter":"likes","count":3,"rollup":{"count":3,"updated_at":"x"}}`, want, false},
		{`{"counter":"likes","count":3,"shard":7,"extra":1,"rollup":{"count":3,"updated_at":"x"}}`, want, false},
		{`{"counter":"likes","delta":1}`, "", true},
		{`{"error":"bad","field":"delta"}`, "", false},
		{"published message 1\n", "", true},
	} {
		if got := checkAnswer(tc.out, tc.want, varyingFields); (got == "") != tc.ok {
			t.Errorf("checkAnswer(%s, %s) = %q, want ok %v", tc.out, tc.want, got, tc.ok)
		}
	}
}

func TestUniqueNames(t *testing.T) {
	rename := uniqueNames([]step{
		{command: `curl -H 'Idempotency-Key: order-42' -d '{"counter":"likes"}'`},
		{command: `curl -s 'h/Count?counter=views'`},
		{command: `make publish ARGS='-key order-43 -times 3 likes:5'`},
	})
	got := rename(`make publish ARGS='-key order-43 -times 3 likes:5' {"counter":"likes"} views order-42 likesx`)
	suffix := strings.TrimPrefix(rename("likes"), "likes")
	want := "make publish ARGS='-key order-43" + suffix + " -times 3 likes" + suffix + ":5' {\"counter\":\"likes" + suffix +
		"\"} views" + suffix + " order-42" + suffix + " likesx"
	if suffix == "" || got != want {
		t.Errorf("rename = %q, want %q", got, want)
	}
}

// TestNamedTestsExist: every Go test, benchmark or fuzz target the README and docs/*.md name exists
// (a name given as a -run pattern or with a * may be the prefix of some), so that "where the
// guarantees are tested" never points at a test that was renamed or removed.
func TestNamedTestsExist(t *testing.T) {
	var have []string
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != repoRoot {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range testFunc.FindAllStringSubmatch(string(data), -1) {
				have = append(have, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(have) < 100 {
		t.Fatalf("found only %d tests in the repository: the search is broken", len(have))
	}
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, page := range append(pages, filepath.Join(repoRoot, "README.md")) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, page)
		for _, n := range testName.FindAllString(string(data), -1) {
			named++
			if !slices.ContainsFunc(have, func(h string) bool { return strings.HasPrefix(h, n) }) {
				t.Errorf("%s names %s, which no test, benchmark or fuzz target is (or begins with)", name, n)
			}
		}
	}
	if named == 0 {
		t.Error("no test named in the docs: the search is broken")
	}
}

// testFunc matches a Go test, benchmark or fuzz function's declaration; testName such a name in prose.
var (
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Z]\w*)\(`)
	testName = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z]\w*`)
)
