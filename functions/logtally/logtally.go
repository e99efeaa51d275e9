// Package logtally logs per-instance event counts once a minute (docs/operations.md, "Monitoring").
//
// Not a supported import: see package counters.
package logtally

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// Window is the summaries' period.
const Window = time.Minute

// Tally counts events by label and logs one summary per label and window. Flush before exit.
// Safe for concurrent use.
type Tally struct {
	log                             *slog.Logger
	event, labelKey, sumKey, maxKey string
	message, summary                string
	full                            int
	now                             func() time.Time

	mu     sync.Mutex
	start  time.Time // zero before the first event
	counts map[string]*count
	timer  *time.Timer
}

type count struct {
	n, sum int64
	max    float64
}

// Options describe the lines of a Tally.
type Options struct {
	Event            string // the summaries' "event" field
	LabelKey         string
	SumKey           string // if set, the sum of amounts
	MaxKey           string // if set, the largest observed value
	Message, Summary string
	Full             int              // events per label and window logged in full
	Now              func() time.Time // nil is time.Now
}

// New returns a Tally that writes to log.
func New(log *slog.Logger, o Options) *Tally {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Tally{log: log, event: o.Event, labelKey: o.LabelKey, sumKey: o.SumKey, maxKey: o.MaxKey, message: o.Message, summary: o.Summary,
		full: o.Full, now: o.Now, counts: map[string]*count{}}
}

// Add counts an event of label adding amount; the first Full with details are logged at level.
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

// Observe counts one event of label with value v, for the window's maximum.
func (t *Tally) Observe(ctx context.Context, label string, v float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.countLocked(ctx, label)
	if c.n == 0 || v > c.max {
		c.max = v
	}
	c.n++
}

// countLocked is label's count in the current window.
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

// Flush writes the current window's summaries now.
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
