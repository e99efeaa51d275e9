package loadreport

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// TestPlotIsAnSVGWithEverySeries checks the plot parses as XML and draws each timeline series with a
// point per second.
func TestPlotIsAnSVGWithEverySeries(t *testing.T) {
	run := Run{Name: "http group-commit K=4 <test>"}
	for i := range 12 {
		run.Timeline = append(run.Timeline, Second{T: i, Offered: int64(100 * i), Acknowledged: int64(90 * i), Shards: 10, Hottest1s: 2, Hottest10s: 1.5})
	}
	var buf bytes.Buffer
	if err := run.WritePlot(&buf); err != nil {
		t.Fatal(err)
	}
	var svg struct {
		XMLName   xml.Name `xml:"svg"`
		Polylines []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
		Texts []string `xml:"text"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &svg); err != nil {
		t.Fatalf("plot is not well-formed SVG: %v", err)
	}
	if len(svg.Polylines) != 6 {
		t.Fatalf("%d lines, want 6 (offered, acknowledged, hottest 1 s, hottest 10 s, shards, 1 write/s)", len(svg.Polylines))
	}
	for _, p := range svg.Polylines {
		if n := len(strings.Fields(p.Points)); n != 12 {
			t.Errorf("a line has %d points, want one per second (12)", n)
		}
	}
	if !strings.Contains(strings.Join(svg.Texts, "\n"), run.Name) {
		t.Errorf("the title %q is not in the plot", run.Name)
	}
}
