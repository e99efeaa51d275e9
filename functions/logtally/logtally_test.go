package logtally_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/shardcount/counters/functions/cloudlog"
	"github.com/shardcount/counters/functions/logtally"
	"github.com/shardcount/counters/internal/testenv"
)

// TestFloodIsCountedExactlyInBoundedLines: N events of two labels over three windows write per
// label and window at most Full lines in full plus one summary, and the summaries add up to N (and
// the amounts to their sum).
func TestFloodIsCountedExactlyInBoundedLines(t *testing.T) {
	var logs testenv.LogBuffer
	now := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	var clock sync.Mutex
	tally := logtally.New(cloudlog.New(&logs, slog.LevelInfo), logtally.Options{Event: "refused", LabelKey: "reason",
		SumKey: "delta", Message: "refused", Summary: "refusals", Full: 3,
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	const perWindow = 1000
	for range 3 {
		for i := range perWindow {
			label := []string{"a", "b"}[i%2]
			tally.Add(context.Background(), label, 2, slog.LevelInfo, slog.Int("i", i))
		}
		clock.Lock()
		now = now.Add(logtally.Window)
		clock.Unlock()
	}
	tally.Flush(context.Background())
	lines := logs.Lines(t)
	if bound := 3 * 2 * (3 + 1); len(lines) != bound {
		t.Errorf("%d events wrote %d lines, want %d (3 windows × 2 labels × (3 in full + 1 summary))", 3*perWindow, len(lines), bound)
	}
	var count, sum float64
	for _, l := range lines {
		if l["event"] == "refused" {
			count += l["count"].(float64)
			sum += l["delta"].(float64)
		}
	}
	if count != 3*perWindow || sum != 2*3*perWindow {
		t.Errorf("summaries count %v events adding %v, want %d adding %d", count, sum, 3*perWindow, 2*3*perWindow)
	}
}

// TestWindowEndFlushesWithoutAnotherEvent: the summary of a window is written at its end by a timer,
// with no event after it.
func TestWindowEndFlushesWithoutAnotherEvent(t *testing.T) {
	var logs testenv.LogBuffer
	tally := logtally.New(cloudlog.New(&logs, slog.LevelInfo), logtally.Options{Event: "applied", LabelKey: "source",
		Message: "applied", Summary: "applied", Full: 0,
		Now: func() time.Time {
			return time.Now().Truncate(logtally.Window).Add(logtally.Window - 50*time.Millisecond)
		}})
	tally.Add(context.Background(), "http", 1, slog.LevelInfo)
	deadline := time.Now().Add(5 * time.Second)
	for len(logs.Lines(t)) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	lines := logs.Lines(t)
	if len(lines) != 1 || lines[0]["count"] != 1.0 || lines[0]["source"] != "http" {
		t.Errorf("lines after the window's end: %v, want one summary counting 1 for http", lines)
	}
}

// TestObserveLogsEachWindowsLargestValue: values observed over two windows write one summary per
// label and window, whatever their number, with the window's count and largest value.
func TestObserveLogsEachWindowsLargestValue(t *testing.T) {
	var logs testenv.LogBuffer
	now := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	var clock sync.Mutex
	tally := logtally.New(cloudlog.New(&logs, slog.LevelInfo), logtally.Options{Event: "written", LabelKey: "source",
		MaxKey: "age_max", Summary: "written", Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	for _, top := range []float64{7.5, 2} {
		for i := range 500 {
			tally.Observe(context.Background(), "trigger", top*float64(i)/499)
		}
		tally.Observe(context.Background(), "scheduler", -1)
		clock.Lock()
		now = now.Add(logtally.Window)
		clock.Unlock()
	}
	tally.Flush(context.Background())
	lines := logs.Lines(t)
	want := []map[string]any{{"source": "trigger", "count": 500.0, "age_max": 7.5}, {"source": "scheduler", "count": 1.0, "age_max": -1.0},
		{"source": "trigger", "count": 500.0, "age_max": 2.0}, {"source": "scheduler", "count": 1.0, "age_max": -1.0}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d summaries: %v", len(lines), len(want), lines)
	}
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || (l["source"] == w["source"] && l["count"] == w["count"] && l["age_max"] == w["age_max"])
		}
		if !found {
			t.Errorf("no summary %v among %v", w, lines)
		}
	}
}
