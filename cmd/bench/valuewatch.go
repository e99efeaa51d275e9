package main

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
)

// valueWatch records the values of documents as a listening app sees them, each change stamped with
// the time it arrived. One listener per document: the emulator reruns a query listener on every
// write to its collection.
type valueWatch struct {
	mu      sync.Mutex
	samples [][]valueSample
	err     error
	stop    context.CancelFunc
	done    sync.WaitGroup
}

type valueSample struct {
	at    time.Time
	value int64
}

// watchValues listens to refs until close.
func watchValues(ctx context.Context, refs []*firestore.DocumentRef, valueOf func(*firestore.DocumentSnapshot) (int64, bool)) *valueWatch {
	w := &valueWatch{samples: make([][]valueSample, len(refs))}
	ctx, w.stop = context.WithCancel(ctx)
	for i, ref := range refs {
		w.done.Go(func() {
			it := ref.Snapshots(ctx)
			defer it.Stop()
			for {
				snap, err := it.Next()
				if err != nil {
					if ctx.Err() == nil {
						w.mu.Lock()
						w.err = cmp.Or(w.err, fmt.Errorf("listen to %s: %w", ref.Path, err))
						w.mu.Unlock()
					}
					return
				}
				if v, ok := valueOf(snap); ok {
					w.mu.Lock()
					w.samples[i] = append(w.samples[i], valueSample{at: time.Now(), value: v})
					w.mu.Unlock()
				}
			}
		})
	}
	return w
}

// latest is document i's last value seen.
func (w *valueWatch) latest(i int) (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.samples[i]
	if len(s) == 0 {
		return 0, false
	}
	return s[len(s)-1].value, true
}

// exactAfter is how long after lastChange document i started showing want for good (0 when it
// showed want already), and false when its last value is not want.
func (w *valueWatch) exactAfter(i int, want int64, lastChange time.Time) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.samples[i]
	if len(s) == 0 || s[len(s)-1].value != want {
		return 0, false
	}
	first := len(s) - 1
	for first > 0 && s[first-1].value == want {
		first--
	}
	return max(0, s[first].at.Sub(lastChange)), true
}

// close stops listening and reports a listen error, if any.
func (w *valueWatch) close() error {
	w.stop()
	w.done.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
