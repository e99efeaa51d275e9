package quickstart

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's root, relative to this package's directory (where go test runs).
const repoRoot = "../.."

// quickStartHeading is the README heading whose first ```bash block is the quick start's commands.
const quickStartHeading = "## Quick start"

// step is one command of the quick start and the answer the README shows for it, if any.
type step struct {
	// command is one shell command line (continuation lines joined).
	command string
	// want is the JSON of the "# {...}" comment right after the command; empty when none is shown.
	want string
	// line is the README line the command starts on, for messages.
	line int
}

// readRepoFile reads a file of the repository.
func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// quickStartSteps returns the commands of the first ```bash block under the quick start heading, each
// with the answer the README shows for it: a "# {" comment line following the command.
func quickStartSteps(readme string) ([]step, error) {
	lines := strings.Split(readme, "\n")
	start := -1
	for i, line := range lines {
		if strings.TrimSpace(line) == quickStartHeading {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("README.md has no %q heading", quickStartHeading)
	}
	var steps []step
	inBlock, pending := false, ""
	for i := start + 1; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case !inBlock && strings.HasPrefix(line, "## "):
			return nil, fmt.Errorf("README.md: no ```bash block under %q", quickStartHeading)
		case !inBlock:
			inBlock = line == "```bash"
			continue
		case line == "```":
			if len(steps) == 0 {
				return nil, fmt.Errorf("README.md line %d: the quick start's ```bash block has no command", i+1)
			}
			return steps, nil
		case strings.HasPrefix(line, "# {"):
			if len(steps) == 0 || steps[len(steps)-1].want != "" {
				return nil, fmt.Errorf("README.md line %d: an answer that follows no command", i+1)
			}
			steps[len(steps)-1].want = strings.TrimPrefix(line, "# ")
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			if pending == "" {
				steps = append(steps, step{line: i + 1})
			}
			if cont, ok := strings.CutSuffix(line, `\`); ok {
				pending += cont
				continue
			}
			steps[len(steps)-1].command = pending + line
			pending = ""
		}
	}
	return nil, fmt.Errorf("README.md: the quick start's ```bash block does not end")
}

// link is a relative link of a Markdown file.
type link struct {
	// path is the linked file relative to the linking file's folder; empty for a link within it.
	path string
	// anchor is the heading anchor after '#', if any.
	anchor string
	line   int
}

var (
	// markdownLink matches [text](target) and ![alt](target); the text may hold code spans.
	markdownLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	// codeSpan matches an inline code span, whose text is no link.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// externalTarget matches link targets that leave the repository.
	externalTarget = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

// relativeLinks returns the links of a Markdown text that stay in the repository, outside code.
func relativeLinks(markdown string) []link {
	var links []link
	inFence := false
	for i, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range markdownLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if externalTarget.MatchString(target) {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			links = append(links, link{path: path, anchor: anchor, line: i + 1})
		}
	}
	return links
}

// headingAnchors returns the anchors GitHub gives a Markdown text's headings (outside code blocks):
// the heading's text in lower case, without punctuation other than '-' and '_', spaces made '-', and
// "-1", "-2", ... added to repeats.
func headingAnchors(markdown string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		text = markdownLink.ReplaceAllStringFunc(text, func(l string) string { // a link's text stays
			return l[strings.Index(l, "[")+1 : strings.Index(l, "]")]
		})
		slug := headingSlug(text)
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// headingSlug is GitHub's anchor of one heading's text.
func headingSlug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
