// Package logtally counts events of one kind on one instance and logs the counts once a minute, so
// that an event that can come in floods (a refused token on a public endpoint) or at every request
// (an applied increment, a roll-up written) costs a bounded number of log lines, and a log-based
// metric over the summary lines stays exact (docs/operations.md, "Monitoring").
package logtally

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// Window is the period of one summary line per label.
const Window = time.Minute

// Tally counts the events of one kind by label (a refusal's reason, an increment's source). Per
// label and window it writes the first Full events it is given details of as lines of their own
// (Message), and at the window's end one summary line (Summary) with the window's count and the sum
// of the amounts added, every event of the window included. A window's summary is written by the
// first Add after it, by a timer at its end, or by Flush, whichever comes first; events still counted
// when the process dies unflushed are lost, so the instance flushes on SIGTERM. Safe for concurrent use.
type Tally struct {
	log *slog.Logger
	// event, labelKey, sumKey, message, summary and full are Options'.
	event, labelKey, sumKey, maxKey string
	message, summary                string
	full                            int
	now                             func() time.Time

	mu     sync.Mutex
	start  time.Time // the current window's start; zero before the first event
	counts map[string]*count
	timer  *time.Timer
}

type count struct {
	n, sum int64
	max    float64
}

// Options describe the lines of a Tally.
type Options struct {
	// Event is the "event" field of the summary lines.
	Event string
	// LabelKey is the field that holds an event's label.
	LabelKey string
	// SumKey, if set, is the summary's field for the sum of the amounts added.
	SumKey string
	// MaxKey, if set, is the summary's field for the largest value given to Observe.
	MaxKey string
	// Message is the text of a line written in full, Summary that of a summary line.
	Message, Summary string
	// Full is how many events per label and window are written in full.
	Full int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// New returns a Tally that writes to log.
func New(log *slog.Logger, o Options) *Tally {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Tally{log: log, event: o.Event, labelKey: o.LabelKey, sumKey: o.SumKey, maxKey: o.MaxKey, message: o.Message, summary: o.Summary,
		full: o.Full, now: o.Now, counts: map[string]*count{}}
}

// Add counts one event of label that adds amount. Of the events of a label in a window that carry
// details, the first Full are also logged, at level, with the details; the rest are only counted.
func (t *Tally) Add(ctx context.Context, label string, amount int64, level slog.Level, details ...slog.Attr) {
	t.mu.Lock()
	c := t.countLocked(ctx, label)
	c.n++
	c.sum += amount
	inFull := len(details) > 0 && c.n <= int64(t.full)
	t.mu.Unlock()
	if inFull {
		t.log.LogAttrs(ctx, level, t.message, append([]slog.Attr{slog.String(t.labelKey, label)}, details...)...)
	}
}

// Observe counts one event of label whose value is v: the summary's MaxKey field is the window's
// largest.
func (t *Tally) Observe(ctx context.Context, label string, v float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.countLocked(ctx, label)
	if c.n == 0 || v > c.max {
		c.max = v
	}
	c.n++
}

// countLocked is label's count in the current window, which it starts or ends first as needed.
func (t *Tally) countLocked(ctx context.Context, label string) *count {
	now := t.now()
	if !t.start.IsZero() && !now.Before(t.start.Add(Window)) {
		t.flushLocked(ctx)
	}
	if t.start.IsZero() {
		t.start = now.Truncate(Window)
		t.timer = time.AfterFunc(t.start.Add(Window).Sub(now), func() { t.Flush(context.Background()) })
	}
	c := t.counts[label]
	if c == nil {
		c = &count{}
		t.counts[label] = c
	}
	return c
}

// Flush writes the summaries of the current window now and starts a new one with the next event.
func (t *Tally) Flush(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushLocked(ctx)
}

func (t *Tally) flushLocked(ctx context.Context) {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	for _, label := range slices.Sorted(maps.Keys(t.counts)) {
		c := t.counts[label]
		attrs := []slog.Attr{slog.String("event", t.event), slog.String(t.labelKey, label), slog.Int64("count", c.n),
			slog.Time("window_start", t.start), slog.Int("window_seconds", int(Window.Seconds()))}
		if t.sumKey != "" {
			attrs = append(attrs, slog.Int64(t.sumKey, c.sum))
		}
		if t.maxKey != "" {
			attrs = append(attrs, slog.Float64(t.maxKey, c.max))
		}
		t.log.LogAttrs(ctx, slog.LevelInfo, t.summary, attrs...)
	}
	clear(t.counts)
	t.start = time.Time{}
}
