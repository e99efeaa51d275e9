package rules

import (
	"fmt"
	"strings"
)

// token is a word (dotted names included), string literal, match path or punctuation character.
type token struct {
	kind tokenKind
	text string
	line int // 1-based
	off  int // byte offset in the file
}

type tokenKind int

const (
	word tokenKind = iota
	str
	path
	punct
)

// lex splits a rules file into tokens; a path token follows the word `match`.
func lex(src string) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated /* comment", line)
			}
			line += strings.Count(src[i:i+2+end+2], "\n")
			i += 2 + end + 2
		case c == '\'' || c == '"':
			start := i
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				} else if src[i] == '\n' {
					return nil, fmt.Errorf("line %d: unterminated string", line)
				}
			}
			if i >= len(src) {
				return nil, fmt.Errorf("line %d: unterminated string", line)
			}
			i++
			toks = append(toks, token{str, src[start:i], line, start})
		case c == '/' && len(toks) > 0 && toks[len(toks)-1].kind == word && toks[len(toks)-1].text == "match":
			start := i
			for i < len(src) && src[i] == '/' {
				i++
				if i < len(src) && src[i] == '{' {
					end := strings.IndexByte(src[i:], '}')
					if end < 0 {
						return nil, fmt.Errorf("line %d: unterminated {wildcard} in a match path", line)
					}
					i += end + 1
					continue
				}
				for i < len(src) && !strings.ContainsRune(" \t\r\n/{", rune(src[i])) {
					i++
				}
			}
			toks = append(toks, token{path, src[start:i], line, start})
		case isWordByte(c):
			start := i
			for i < len(src) && isWordByte(src[i]) {
				i++
			}
			toks = append(toks, token{word, src[start:i], line, start})
		default:
			toks = append(toks, token{punct, string(c), line, i})
			i++
		}
	}
	return toks, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// segment is a match path's literal ID, {name} wildcard or {name=**} wildcard (zero or more segments).
type segment struct {
	text      string
	wildcard  bool
	recursive bool
}

func parsePath(p string) []segment {
	var segs []segment
	for s := range strings.SplitSeq(strings.Trim(p, "/"), "/") {
		if s == "" {
			continue
		}
		inner, isWild := strings.CutPrefix(s, "{")
		segs = append(segs, segment{text: s, wildcard: isWild, recursive: isWild && strings.HasSuffix(inner, "=**}")})
	}
	return segs
}

// overlap says whether some document path matches both a and b.
func overlap(a, b []segment) bool {
	switch {
	case len(a) > 0 && a[0].recursive:
		return overlap(a[1:], b) || len(b) > 0 && overlap(a, b[1:])
	case len(b) > 0 && b[0].recursive:
		return overlap(a, b[1:]) || len(a) > 0 && overlap(a[1:], b)
	case len(a) == 0 || len(b) == 0:
		return len(a) == len(b)
	case a[0].wildcard || b[0].wildcard || a[0].text == b[0].text:
		return overlap(a[1:], b[1:])
	}
	return false
}

// within says whether every document path that a matches, b matches too.
func within(a, b []segment) bool {
	switch {
	case len(b) > 0 && b[0].recursive:
		return within(a, b[1:]) || len(a) > 0 && within(a[1:], b)
	case len(a) > 0 && a[0].recursive:
		return false
	case len(a) == 0 || len(b) == 0:
		return len(a) == len(b)
	case b[0].wildcard || !a[0].wildcard && a[0].text == b[0].text:
		return within(a[1:], b[1:])
	}
	return false
}

// showPath writes a path as the rules would, relative to the documents when below them.
func showPath(segs []segment) string {
	if len(segs) >= 3 && segs[0].text == "databases" && segs[1].wildcard && !segs[1].recursive && segs[2].text == "documents" {
		segs = segs[3:]
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteString("/" + s.text)
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// allowStatement is one `allow` of a ruleset, with the whole path of the matches around it.
type allowStatement struct {
	line      int
	text      string
	path      []segment
	condition string // empty: no condition, which allows
}

// writes says whether the statement allows a write of some kind (write, create, update, delete).
func (a allowStatement) writes() bool {
	methods, _, _ := strings.Cut(strings.TrimPrefix(a.text, "allow"), ":")
	for m := range strings.FieldsFuncSeq(methods, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		if m == "write" || m == "create" || m == "update" || m == "delete" {
			return true
		}
	}
	return false
}

// closed says whether the statement allows nothing: its condition is literally false.
func (a allowStatement) closed() bool { return a.condition == "false" }

// ruleset is what composing needs to know of a rules file.
type ruleset struct {
	version2     bool
	allows       []allowStatement
	serviceClose int // byte offset of the `}` that closes `service cloud.firestore`
}

// parse reads a rules file's rules_version, its firestore allow statements, and where the service ends.
func parse(src string) (ruleset, error) {
	toks, err := lex(src)
	if err != nil {
		return ruleset{}, err
	}
	var rs ruleset
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == word && t.text == "rules_version" && i+3 < len(toks) && toks[i+1].text == "=" {
			rs.version2 = toks[i+2].text == "'2'" || toks[i+2].text == `"2"`
		}
		if t.kind == word && t.text == "service" && i+2 < len(toks) && toks[i+1].text == "cloud.firestore" && toks[i+2].text == "{" {
			p := &parser{src: src, toks: toks, rs: &rs}
			end, err := p.body(i+3, nil)
			if err != nil {
				return ruleset{}, err
			}
			if end >= len(toks) {
				return ruleset{}, fmt.Errorf("line %d: service cloud.firestore is never closed", t.line)
			}
			rs.serviceClose = toks[end].off
			return rs, nil
		}
	}
	return ruleset{}, fmt.Errorf("no `service cloud.firestore { ... }` block")
}

type parser struct {
	src  string
	toks []token
	rs   *ruleset
}

// body reads statements from toks[i] and returns the index of the `}` closing their block.
func (p *parser) body(i int, prefix []segment) (int, error) {
	for i < len(p.toks) {
		t := p.toks[i]
		switch {
		case t.text == "}":
			return i, nil
		case t.kind == word && t.text == "match":
			if i+2 >= len(p.toks) || p.toks[i+1].kind != path || p.toks[i+2].text != "{" {
				return 0, fmt.Errorf("line %d: a match without a path and a block", t.line)
			}
			inner := append(append([]segment(nil), prefix...), parsePath(p.toks[i+1].text)...)
			end, err := p.body(i+3, inner)
			if err != nil {
				return 0, err
			}
			if end >= len(p.toks) {
				return 0, fmt.Errorf("line %d: match %s is never closed", t.line, p.toks[i+1].text)
			}
			i = end + 1
		case t.kind == word && t.text == "function":
			for i < len(p.toks) && p.toks[i].text != "{" {
				i++
			}
			i = p.skipBlock(i)
		case t.kind == word && t.text == "allow":
			i = p.allow(i, prefix)
		default:
			i++
		}
	}
	return i, nil
}

// skipBlock returns the index after the block that opens at toks[i].
func (p *parser) skipBlock(i int) int {
	depth := 0
	for ; i < len(p.toks); i++ {
		switch p.toks[i].text {
		case "{":
			depth++
		case "}":
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return i
}

// allow records the allow statement at toks[i] and returns the index after it.
func (p *parser) allow(i int, prefix []segment) int {
	start, depth, colon := i, 0, -1
	for i++; i < len(p.toks); i++ {
		t := p.toks[i]
		if depth == 0 && (t.text == ";" || t.text == "}" || t.kind == word && (t.text == "allow" || t.text == "match" || t.text == "function")) {
			break
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ":":
			if depth == 0 && colon < 0 {
				colon = i
			}
		}
	}
	end := i
	a := allowStatement{line: p.toks[start].line, text: p.source(start, end), path: prefix}
	if colon >= 0 {
		a.condition = strings.TrimPrefix(p.source(colon+1, end), "if ")
	}
	p.rs.allows = append(p.rs.allows, a)
	if end < len(p.toks) && p.toks[end].text == ";" {
		end++
	}
	return end
}

// source is the text of toks[from:to], tokens separated by one space.
func (p *parser) source(from, to int) string {
	if from >= to {
		return ""
	}
	last := p.toks[to-1]
	return strings.Join(strings.Fields(p.src[p.toks[from].off:last.off+len(last.text)]), " ")
}
