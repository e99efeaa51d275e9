package loadreport

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/shardcount/counters/internal/commitlog"
)

// TestDocumentsPerChangeCountOnlyOursInTheRun: writes and reads per change count the documents of
// a known kind in [from, to), split by kind; a commit counts when it writes one of ours.
func TestDocumentsPerChangeCountOnlyOursInTheRun(t *testing.T) {
	from := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	to := from.Add(10 * time.Second)
	kind := func(doc string) string {
		if strings.HasPrefix(doc, "app/") {
			return ""
		}
		return strings.Split(doc, "/")[0]
	}
	at := func(s int, docs ...string) commitlog.Commit {
		return commitlog.Commit{Time: from.Add(time.Duration(s) * time.Second), Docs: docs}
	}
	lines := []commitlog.Commit{
		at(0, "records/a", "records/b", "shards/0"),
		at(3, "app/x"),
		at(9, "records/c", "app/y"),
		at(-1, "records/early"),
		at(10, "records/late"),
	}
	r := Run{Documents: &Documents{Changes: 2}, Timeline: make([]Second, 10)}
	r.CountDocumentWrites(lines, from, to, kind)
	r.CountDocumentReads(lines[:2], from, to, kind)
	d := r.Documents
	if d.DocumentsPerChange != 2 || d.CommitsPerChange != 1 || !maps.Equal(d.ByKind, map[string]float64{"records": 1.5, "shards": 0.5}) {
		t.Errorf("writes: %.2f per change, %.2f commits, by kind %v; want 2, 1, records 1.5 and shards 0.5", d.DocumentsPerChange, d.CommitsPerChange, d.ByKind)
	}
	if d.ReadsPerChange != 1.5 || !maps.Equal(d.ReadsByKind, map[string]float64{"records": 1, "shards": 0.5}) {
		t.Errorf("reads: %.2f per change, by kind %v; want 1.5, records 1 and shards 0.5", d.ReadsPerChange, d.ReadsByKind)
	}
}
