package main

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestHeadlineRatiosFollowTheirTable holds docs/performance.md's guide mode vs group commit section
// true of itself: the ratios written out are the table's own numbers divided, and the command it
// names is one of make bench's default set.
func TestHeadlineRatiosFollowTheirTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Guide mode vs group commit\n")
	if !ok {
		t.Fatal(`docs/performance.md has no "## Guide mode vs group commit" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")

	row := func(mode string) (throughput, documents float64) {
		t.Helper()
		for _, line := range strings.Split(section, "\n") {
			cells := strings.Split(line, "|")
			if len(cells) < 6 || strings.TrimSpace(cells[1]) != mode {
				continue
			}
			return number(t, cells[2]), number(t, cells[4])
		}
		t.Fatalf("no table row for %q", mode)
		return 0, 0
	}
	guideThroughput, guideDocuments := row("guide")
	groupThroughput, groupDocuments := row("group commit")

	m := regexp.MustCompile(`\*\*(\d+)× fewer documents\*\* per increment, at ([\d.]+)× the throughput`).FindStringSubmatch(section)
	if m == nil {
		t.Fatal(`no "**N× fewer documents** per increment, at M× the throughput" line`)
	}
	if want := fmt.Sprint(math.Round(guideDocuments / groupDocuments)); m[1] != want {
		t.Errorf("%s× fewer documents written, but the table says %.1f / %.1f = %s×", m[1], guideDocuments, groupDocuments, want)
	}
	if want := strconv.FormatFloat(groupThroughput/guideThroughput, 'f', 1, 64); m[2] != want {
		t.Errorf("%s× the throughput written, but the table says %.0f / %.0f = %s×", m[2], groupThroughput, guideThroughput, want)
	}

	cmd := regexp.MustCompile("`make bench ARGS='([^']+)'`").FindStringSubmatch(section)
	if cmd == nil {
		t.Fatal("the section names no make bench command")
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "$(BENCH) "+cmd[1]+" ||") {
		t.Errorf("the section's command (ARGS %q) is not one of the Makefile's default bench set", cmd[1])
	}
}

// number reads a table cell's leading number ("2,120.8", "535 ms / 8,065 ms" reads 535).
func number(t *testing.T, cell string) float64 {
	t.Helper()
	field := strings.Fields(strings.ReplaceAll(cell, ",", ""))
	if len(field) == 0 {
		t.Fatalf("empty table cell")
	}
	v, err := strconv.ParseFloat(field[0], 64)
	if err != nil {
		t.Fatalf("table cell %q is not a number: %v", cell, err)
	}
	return v
}
