package counter

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardcount/counters/shared/wire"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardcount/counters/shared"
)

// Windows a counter can count in besides all time, in UTC buckets.
const (
	WindowHour  = "hour"
	WindowDay   = "day"
	WindowMonth = "month"
)

// windowLayouts are the bucket labels' layouts.
var windowLayouts = map[string]string{WindowHour: "2006-01-02T15", WindowDay: "2006-01-02", WindowMonth: "2006-01"}

// Windows lists every window, shortest first.
var Windows = []string{WindowHour, WindowDay, WindowMonth}

// ValidWindow reports whether w names a window.
func ValidWindow(w string) bool {
	_, ok := windowLayouts[w]
	return ok
}

// Bucket labels the bucket of valid window w holding t.
func Bucket(w string, t time.Time) string { return t.UTC().Format(windowLayouts[w]) }

// ValidBucket reports whether label is a bucket label of window w.
func ValidBucket(w, label string) bool {
	layout, ok := windowLayouts[w]
	if !ok {
		return false
	}
	t, err := time.Parse(layout, label)
	return err == nil && t.Format(layout) == label
}

// bucketPath is the shard field of window w's bucket label.
func bucketPath(w, label string) firestore.FieldPath {
	return firestore.FieldPath{shared.FieldBuckets, w, label}
}

// bucketIncrements adds each part to its buckets: {w: {label: Increment}}; nil without windows.
func bucketIncrements(windows []string, parts []timedDelta) map[string]any {
	if len(windows) == 0 {
		return nil
	}
	m := make(map[string]any, len(windows))
	for _, w := range windows {
		sums := map[string]int64{}
		for _, p := range parts {
			sums[Bucket(w, p.at)] += p.delta
		}
		labels := make(map[string]any, len(sums))
		for label, sum := range sums {
			labels[label] = firestore.Increment(sum)
		}
		m[w] = labels
	}
	return m
}

// sameBuckets reports whether a and b share every window's bucket.
func sameBuckets(windows []string, a, b time.Time) bool {
	for _, w := range windows {
		if Bucket(w, a) != Bucket(w, b) {
			return false
		}
	}
	return true
}

// WindowsOf reads counter document snap's windows, in Windows order.
func WindowsOf(snap *firestore.DocumentSnapshot) []string { return windowsOf(snap.Data()) }

// GroupOf reads the group of counter document snap, "" for none.
func GroupOf(snap *firestore.DocumentSnapshot) string {
	g, _ := snap.Data()[shared.FieldGroup].(string)
	return g
}

// windowsOf reads a counter document's windows, ignoring unknown names.
func windowsOf(data map[string]any) []string {
	list, _ := data[shared.FieldWindows].([]any)
	names := make([]string, 0, len(list))
	for _, v := range list {
		if w, ok := v.(string); ok {
			names = append(names, w)
		}
	}
	return canonicalWindows(names)
}

// canonicalWindows is ws' valid windows, once each, in Windows order; never nil.
func canonicalWindows(ws []string) []string {
	out := []string{}
	for _, w := range Windows {
		if slices.Contains(ws, w) {
			out = append(out, w)
		}
	}
	return out
}

// WindowCount is counter id's count in bucket label of window w.
func (s *Reader) WindowCount(ctx context.Context, id, w, label string) (int64, error) {
	res, err := s.sh.schema.ShardsRef(s.sh.client, id).NewAggregationQuery().WithSumPath(bucketPath(w, label), sumAlias).Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("sum bucket %s %s of counter %q: %w", w, label, id, err)
	}
	n, err := aggregateInt(res, sumAlias)
	if err != nil {
		return 0, fmt.Errorf("sum bucket %s %s of counter %q: %w", w, label, id, err)
	}
	return n, nil
}

// WindowValue is a counter's count in one bucket of a window.
type WindowValue struct {
	BucketCount
	Windows []string // the counter's now
}

// WindowValue reads counter id's count in bucket label of window w; "" is the current bucket,
// which needs w among its windows (*wire.FieldError). ErrNotFound for a missing counter.
func (s *Reader) WindowValue(ctx context.Context, id, w, label string) (WindowValue, error) {
	snap, err := s.sh.schema.CounterRef(s.sh.client, id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return WindowValue{}, ErrNotFound
	}
	if err != nil {
		return WindowValue{}, fmt.Errorf("read counter %q: %w", id, err)
	}
	v := WindowValue{Windows: windowsOf(snap.Data()), BucketCount: BucketCount{Bucket: label}}
	if label == "" {
		if !slices.Contains(v.Windows, w) {
			return WindowValue{}, &wire.FieldError{Field: "window", Message: fmt.Sprintf(
				"counter %q does not count by %s (its windows: %v); add it with ConfigureCounter's windows, or ask for a past bucket", id, w, v.Windows)}
		}
		v.Bucket = Bucket(w, s.sh.clock.Now())
	}
	if v.Count, err = s.WindowCount(ctx, id, w, v.Bucket); err != nil {
		return WindowValue{}, err
	}
	return v, nil
}

// BucketCount is a counter's count in one bucket of a window.
type BucketCount struct {
	Bucket string // label, such as 2026-11-23
	Count  int64
}
