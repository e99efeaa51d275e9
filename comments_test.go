package counters

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxCommentWordsPerCodeLine bounds the comment words per code line of the non-test Go files:
// comments state contracts, the reasoning lives in docs/ (docs/development.md, "Layout").
const maxCommentWordsPerCodeLine = 1.5

// TestCommentsStayContracts counts the words of every comment and the lines holding code in the
// non-test, non-generated Go files, and holds their ratio to maxCommentWordsPerCodeLine.
func TestCommentsStayContracts(t *testing.T) {
	var words, lines int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		w, l := commentWordsAndCodeLines(src)
		if w >= 0 {
			words, lines = words+w, lines+l
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lines == 0 {
		t.Fatal("no Go code found")
	}
	ratio := float64(words) / float64(lines)
	t.Logf("%d comment words over %d code lines: %.2f per line", words, lines, ratio)
	if ratio > maxCommentWordsPerCodeLine {
		t.Errorf("%.2f comment words per code line, want at most %.1f: say what a function promises in a few lines and move the reasoning to docs/",
			ratio, maxCommentWordsPerCodeLine)
	}
}

// commentWordsAndCodeLines returns the words in src's comments and the lines holding a token that is
// no comment; -1 words for a generated file.
func commentWordsAndCodeLines(src []byte) (words, lines int) {
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, scanner.ScanComments)
	code := map[int]bool{}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.COMMENT {
			if tok != token.SEMICOLON || lit == ";" {
				code[file.Line(pos)] = true
			}
			continue
		}
		if strings.HasPrefix(lit, "// Code generated ") && strings.HasSuffix(lit, " DO NOT EDIT.") {
			return -1, 0
		}
		text := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(lit, "//"), "/*"), "*/")
		words += len(strings.Fields(text))
	}
	return words, len(code)
}
