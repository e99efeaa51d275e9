package loadreport

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Plot sizes, in SVG user units.
const (
	plotWidth   = 900
	panelHeight = 220
	plotLeft    = 70
	plotRight   = 170 // room for the legend
	plotTop     = 56
	panelGap    = 50
)

// series is one line of a panel.
type series struct {
	name   string
	color  string
	dashed bool
	values []float64
}

// WritePlot draws the run's timeline as SVG: the load, then the hottest document's writes and
// the shard count.
func (r Run) WritePlot(w io.Writer) error {
	n := len(r.Timeline)
	col := func(f func(Second) float64) []float64 {
		v := make([]float64, n)
		for i, s := range r.Timeline {
			v[i] = f(s)
		}
		return v
	}
	load := []series{
		{"offered/s", "#1f77b4", false, col(func(s Second) float64 { return float64(s.Offered) })},
		{"acknowledged/s", "#2ca02c", false, col(func(s Second) float64 { return float64(s.Acknowledged) })},
	}
	docs := []series{
		{"hottest doc, 1 s", "#d62728", false, col(func(s Second) float64 { return s.Hottest1s })},
		{"hottest doc, 10 s", "#ff7f0e", false, col(func(s Second) float64 { return s.Hottest10s })},
		{"shard count", "#9467bd", false, col(func(s Second) float64 { return float64(s.Shards) })},
		{"1 write/s", "#555555", true, col(func(Second) float64 { return 1 })},
	}
	var b strings.Builder
	height := plotTop + 2*panelHeight + 2*panelGap
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", plotWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15">%s</text>`+"\n", plotLeft, escape(r.Name))
	panel(&b, plotTop, "increments per second", n, load)
	panel(&b, plotTop+panelHeight+panelGap, "writes/s of one document; shards", n, docs)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">seconds since the load started</text>`+"\n",
		plotLeft+(plotWidth-plotLeft-plotRight)/2, height-8)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// panel draws one chart with axes, grid, lines and legend, its top at y0.
func panel(b *strings.Builder, y0 int, title string, n int, lines []series) {
	width := plotWidth - plotLeft - plotRight
	top := 0.0
	for _, s := range lines {
		for _, v := range s.values {
			top = max(top, v)
		}
	}
	top = niceCeiling(top)
	x := func(i int) float64 { return plotLeft + float64(i)*float64(width)/float64(max(1, n-1)) }
	y := func(v float64) float64 { return float64(y0+panelHeight) - v/top*panelHeight }
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#333">%s</text>`+"\n", plotLeft, y0-6, escape(title))
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", plotLeft, plotLeft+width, y(v), y(v))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-6, y(v)+4, trim(v))
	}
	step := max(1, niceStep(n))
	for i := 0; i < n; i += step {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(i), y0+panelHeight+16, i)
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", plotLeft, y0, width, panelHeight)
	for k, s := range lines {
		pts := make([]string, len(s.values))
		for i, v := range s.values {
			pts[i] = fmt.Sprintf("%.1f,%.1f", x(i), y(v))
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", s.color, dash, strings.Join(pts, " "))
		ly := y0 + 14 + 18*k
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`+"\n", plotLeft+width+10, plotLeft+width+30, ly, ly, s.color, dash)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", plotLeft+width+36, ly+4, escape(s.name))
	}
}

// niceCeiling rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeiling(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// niceStep spaces about ten labels over n seconds.
func niceStep(n int) int { return int(niceCeiling(float64(n) / 10)) }

// trim formats an axis value without needless decimals.
func trim(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// escape makes s safe inside SVG text.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
